/**
 * `npm run deploy:local` / `npm run destroy:local`: the deploy rehearsal (deploy/rehearsal.ts) as
 * two commands.
 *
 *   npm run deploy:local                    # moto on a free port, bootstrap, deploy Flow-dev, report
 *   npm run deploy:local -- -c stage=qa     # context for the app (a -c given here wins)
 *   AWS_ENDPOINT_URL=http://localhost:4566 npm run deploy:local   # LocalStack (or a running moto)
 *   npm run destroy:local                   # cdk destroy, then stop the moto deploy:local started
 *
 * Without AWS_ENDPOINT_URL, deploy:local starts moto detached and leaves it running, so the
 * deployment can be looked at (`aws --endpoint-url <url> …`) and destroyed later; a second
 * deploy:local reuses it (a stack update). What it started and with which context is kept in
 * .deploy-local/state.json (beside the cloud assembly and moto's log), which destroy:local reads;
 * it destroys from that cloud assembly, running no app, or synthesizes when the assembly is gone.
 *
 * Exit codes: 0 done; 1 the deploy or destroy failed (the CLI's output is printed); 2 bad arguments.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROJECT_ROOT } from "../infra/config.js";
import {
  answersAsMoto,
  bootstrapIfNeeded,
  CdkCommandError,
  deployStack,
  describeDeployment,
  destroyStack,
  formatReport,
  openEndpoint,
  type RehearsalEndpoint,
  rehearsalContext,
  stackExists,
  stackNameOf,
} from "./rehearsal.js";

const STATE_DIR = join(PROJECT_ROOT, ".deploy-local");
const STATE_FILE = join(STATE_DIR, "state.json");
const OUTDIR = join(STATE_DIR, "cdk.out");

interface State {
  endpoint: string;
  /** The moto deploy:local started (absent when AWS_ENDPOINT_URL named the endpoint). */
  pid?: number;
  /** The -c values given (kept for the next deploy:local), and the whole context deployed with. */
  given: Record<string, string>;
  context: Record<string, string>;
}

class UsageError extends Error {}

/** `-c key=value` / `--context key=value`, nothing else. */
function parseContextArgs(args: readonly string[]): Record<string, string> {
  const context: Record<string, string> = {};
  for (let i = 0; i < args.length; i += 1) {
    const arg = args[i]!;
    if (arg !== "-c" && arg !== "--context") throw new UsageError(`unknown argument ${arg}`);
    const pair = args[i + 1];
    const eq = pair?.indexOf("=") ?? -1;
    if (pair === undefined || eq < 1) throw new UsageError(`${arg} needs key=value`);
    context[pair.slice(0, eq)] = pair.slice(eq + 1);
    i += 1;
  }
  return context;
}

function readState(): State | undefined {
  return existsSync(STATE_FILE) ? (JSON.parse(readFileSync(STATE_FILE, "utf8")) as State) : undefined;
}

/** True only for a live process that is a moto server (a stale pid may be someone else's now). */
function isMotoProcess(pid: number): boolean {
  try {
    return /moto/.test(readFileSync(`/proc/${pid}/cmdline`, "utf8"));
  } catch {
    return false;
  }
}

const echo = (chunk: string) => process.stderr.write(chunk);

async function deploy(given: Record<string, string>): Promise<void> {
  mkdirSync(STATE_DIR, { recursive: true });
  const previous = readState();
  let endpoint: RehearsalEndpoint;
  let pid: number | undefined;
  if (process.env.AWS_ENDPOINT_URL?.trim()) {
    endpoint = await openEndpoint();
  } else if (
    previous?.pid !== undefined &&
    isMotoProcess(previous.pid) &&
    (await answersAsMoto(previous.endpoint))
  ) {
    endpoint = { url: previous.endpoint, moto: true };
    pid = previous.pid;
    console.error(`deploy:local: reusing moto (pid ${pid}) on ${endpoint.url}`);
  } else {
    endpoint = await openEndpoint({ env: {}, detachedLog: join(STATE_DIR, "moto.log") });
    pid = endpoint.spawned?.pid();
    console.error(
      `deploy:local: started moto (pid ${pid}) on ${endpoint.url}; npm run destroy:local stops it`,
    );
  }
  // The rest of the context is prepared again: a certificate of an earlier moto is not in this one.
  const kept = { ...previous?.given, ...given };
  const context = await rehearsalContext(endpoint.url, kept);
  const state: State = {
    endpoint: endpoint.url,
    given: kept,
    context,
    ...(pid === undefined ? {} : { pid }),
  };
  // Written before the deploy, so destroy:local can clean up after a failed one too.
  writeFileSync(STATE_FILE, `${JSON.stringify(state, null, 2)}\n`);
  const run = { endpoint, context, outdir: OUTDIR, echo };
  await bootstrapIfNeeded(run);
  const deployed = await deployStack(run);
  const deployment = await describeDeployment(endpoint.url, OUTDIR, stackNameOf(context));
  console.log(formatReport(deployment, endpoint));
  console.log(`(cdk deploy: ${deployed.seconds.toFixed(1)} s)`);
}

async function destroy(given: Record<string, string>): Promise<void> {
  const state = readState();
  const url = process.env.AWS_ENDPOINT_URL?.trim() || state?.endpoint;
  if (url === undefined) {
    console.log("destroy:local: nothing to destroy (no .deploy-local/state.json and no AWS_ENDPOINT_URL)");
    return;
  }
  const context = { ...state?.context, ...given };
  const stackName = stackNameOf(context);
  const pid = url === state?.endpoint ? state.pid : undefined;
  if (pid !== undefined && !isMotoProcess(pid)) {
    console.log(`destroy:local: the moto deploy:local started (pid ${pid}) is gone, and the stack with it`);
  } else {
    const destroyed = await destroyStack({
      endpoint: { url, moto: await answersAsMoto(url) },
      context,
      outdir: OUTDIR,
      echo,
    });
    if (await stackExists(url, stackName))
      throw new Error(`${stackName} is still on ${url} after cdk destroy`);
    if (destroyed.incomplete !== undefined) {
      console.log(`destroy:local: the endpoint left resources behind: ${destroyed.incomplete}`);
    }
    console.log(`destroy:local: ${stackName} deleted from ${url}`);
  }
  if (pid !== undefined) {
    if (isMotoProcess(pid)) {
      process.kill(pid, "SIGTERM");
      console.log(`destroy:local: stopped the moto deploy:local started (pid ${pid})`);
    }
    rmSync(STATE_DIR, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const [command, ...args] = process.argv.slice(2);
  try {
    const given = parseContextArgs(args);
    if (command === "deploy") await deploy(given);
    else if (command === "destroy") await destroy(given);
    else throw new UsageError(`unknown command ${command ?? "(none)"}`);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(
        `${error.message}\nusage: tsx deploy/local.ts deploy|destroy [-c key=value …]  (npm run deploy:local / destroy:local)`,
      );
      process.exit(2);
    }
    // The CLI's output was already echoed as it ran: its first line says which command failed.
    const message =
      error instanceof CdkCommandError ? error.message.split("\n")[0] : (error as Error).message;
    console.error(`${command}:local failed: ${message}`);
    process.exit(1);
  }
}

await main();
