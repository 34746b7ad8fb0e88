/**
 * bench:fleet's command line (bench/fleet.ts): `--quick`, `--skip-moto`, `--seed N` (an integer,
 * default 7) and `--task-minutes N` (a child task's time from its start to its outcome, over which
 * its traffic is spread: above 0, default 10, one 10-minute flash; 60 is a default-rule rack's six
 * stages flashed one after another). A value it cannot use is an error naming the flag.
 */
export interface FleetArgs {
  quick: boolean;
  skipMoto: boolean;
  seed: number;
  taskMinutes: number;
}

export function parseFleetArgs(argv: readonly string[]): FleetArgs {
  const flag = (name: string) => argv.includes(name);
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? (argv[i + 1] ?? "") : undefined;
  };
  const seed = Number(value("--seed") ?? 7);
  if (value("--seed") === "" || !Number.isInteger(seed))
    throw new Error(`--seed: must be an integer (got ${value("--seed")})`);
  const taskMinutes = Number(value("--task-minutes") ?? 10);
  if (!(taskMinutes > 0) || !Number.isFinite(taskMinutes)) {
    throw new Error(`--task-minutes: must be a number of minutes above 0 (got ${value("--task-minutes")})`);
  }
  return { quick: flag("--quick"), skipMoto: flag("--skip-moto"), seed, taskMinutes };
}
