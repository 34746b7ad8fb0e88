/**
 * The local stack's own moto (DynamoDB, its streams, S3 and EventBridge), watched: a moto that dies
 * under a running stack comes back from its data directory, or stops the stack.
 *
 * With a data dir, everything moto acknowledged is on disk, so it restarts (on the same port) and
 * the stack rides the outage like any store outage (NOT_SERVING, UNAVAILABLE, back-offs); a second
 * death within a minute of a restart stops the stack. Without one, its tables are gone, and going
 * on with empty tables would be worse than stopping.
 */

import { join } from "node:path";
import { type LocalMoto, startLocalMoto } from "./moto.js";

export interface SupervisedMotoOptions {
  /** The stack's data directory: moto keeps its tables in `<dataDir>/dynamodb`. */
  dataDir?: string;
  /** Whether the stack is stopping already (moto exiting then is expected). */
  stopping: () => boolean;
  /** Stops the whole stack, once. */
  stopAll: () => Promise<void>;
  /** Tells the store-health monitor the store is down (moto exited). */
  storeDown: (reason: string) => void;
  /** Called once the stack has stopped itself for good, after the reason was logged. */
  onFatal?: (reason: string) => void;
  log: (line: string) => void;
}

export async function startSupervisedMoto(options: SupervisedMotoOptions): Promise<LocalMoto> {
  const { log, stopAll } = options;
  const motoDir = options.dataDir ? join(options.dataDir, "dynamodb") : undefined;
  let moto: LocalMoto | undefined;
  let restartedAt = Number.NEGATIVE_INFINITY;
  const fatal = (reason: string) => {
    log(reason);
    // The store is gone: stop what stops within a few seconds, and do not wait on calls that
    // would only run out their retries against it.
    let timer: NodeJS.Timeout | undefined;
    void Promise.race([
      stopAll(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 5_000);
      }),
    ]).then(() => {
      clearTimeout(timer);
      options.onFatal?.(reason);
    });
  };
  const onUnexpectedExit = (why: string) => {
    if (options.stopping()) return;
    if (motoDir === undefined) {
      fatal(
        `moto (DynamoDB) exited unexpectedly (${why}); its tables were in memory only (no --data-dir), so the local stack stops`,
      );
      return;
    }
    if (Date.now() - restartedAt < 60_000) {
      fatal(`moto (DynamoDB) exited again (${why}) within a minute of its restart; the local stack stops`);
      return;
    }
    restartedAt = Date.now();
    log(`moto (DynamoDB) exited unexpectedly (${why}); restarting it from ${motoDir}`);
    options.storeDown(`moto exited (${why})`);
    moto!
      .restart()
      .catch((error: unknown) =>
        fatal(`moto (DynamoDB) could not be restarted from ${motoDir}: ${(error as Error).message}`),
      );
  };
  moto = await startLocalMoto({
    ...(motoDir ? { dataDir: motoDir } : {}),
    onUnexpectedExit,
    log,
  });
  return moto;
}
