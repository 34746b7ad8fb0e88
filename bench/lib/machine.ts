/** What a benchmark figure depends on besides the code: printed at the top of every report. */
import os from "node:os";

export interface MachineFacts {
  cores: number;
  cpu: string;
  memoryGiB: number;
  node: string;
  platform: string;
  /** 1, 5 and 15-minute load averages when the benchmark started. */
  loadAverage: [number, number, number];
}

export function machineFacts(): MachineFacts {
  const [one = 0, five = 0, fifteen = 0] = os.loadavg();
  return {
    cores: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    loadAverage: [one, five, fifteen],
  };
}

export function describeMachine(facts: MachineFacts): string[] {
  const load = facts.loadAverage.map((l) => l.toFixed(2)).join(" / ");
  return [
    `machine   ${facts.cores} cores (${facts.cpu}), ${facts.memoryGiB} GiB, ${facts.platform}`,
    `node      ${facts.node}`,
    `load avg  ${load} (1 / 5 / 15 min, at start; ${(facts.loadAverage[0] / facts.cores).toFixed(2)} per core)`,
  ];
}
