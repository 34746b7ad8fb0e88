/** What the child-task steps are given: the stores and ports (src/app/ports.ts), a clock, a logger. */
import type { ExternalCheckConfig } from "../../domain/external-check.js";
import { type Logger, silentLogger } from "../observability.js";
import type {
  BmcAuthSealer,
  BmcCommandPublisher,
  CommandSetStore,
  ExternalCheckRunner,
  FirmwareImageStore,
  FirmwareVersionRecorder,
  ImageObjectStore,
  RackLockStore,
  ReadinessStore,
  RunStore,
  RunWaker,
  TaskSecretStore,
  TaskStore,
  WaveWaker,
} from "../ports.js";

export interface TaskStepsDeps {
  tasks: TaskStore;
  /** The run's target: its outcome, and the prior versions the preflight keeps on it. */
  runs: Pick<RunStore, "getRunSecrets" | "recordOutcome" | "recordPriorVersions">;
  locks: RackLockStore;
  /** The task's BMC commands and what the BMCs reported (one record per task and family). */
  commands: CommandSetStore;
  secrets: TaskSecretStore;
  sealer: BmcAuthSealer;
  publisher: BmcCommandPublisher;
  firmware: FirmwareVersionRecorder;
  /**
   * The inventory's readiness, checked by the preflight before anything is flashed; the rack's
   * components, where a whole-rack AC cycle finds the rack's power shelf.
   */
  readiness: Pick<ReadinessStore, "notReady" | "rackComponents">;
  clock: () => number;
  /**
   * The firmware image catalog: each update command carries its image (images.ts); the
   * preflight reads the rack's components through it too where it can (`getImagesWithRack`), and
   * its task and the BMCs' answers with them where it can (`getImagesWithRackAndTask`).
   */
  images: Pick<FirmwareImageStore, "getImages" | "getImagesWithRack" | "getImagesWithRackAndTask">;
  /** Presigns the GET of an image's bytes for a BMC (valid until the wave's deadline). */
  imageUrls: Pick<ImageObjectStore, "presignGet">;
  /** Told when a run child's outcome is recorded, so the dispatcher refills the slot at once. */
  waker?: RunWaker;
  /** Wakes an execution waiting for its wave (AwaitWave); absent: the wait's timeout ends it. */
  waveWaker?: WaveWaker;
  /**
   * The deployment's external health checks and what hands a rack to one (external-check.ts);
   * absent: none configured (a rule naming one is refused at create; a check gone since is
   * inconclusive). `runs`: where an inconclusive verdict pauses the task's run.
   */
  externalChecks?: {
    checks: readonly ExternalCheckConfig[];
    runner: ExternalCheckRunner;
    runs: Pick<RunStore, "getRun" | "saveRun">;
  };
  /** One line per event that matters: a task started, done with its preflight, finished or cancelled. */
  logger?: Logger;
}

/** The deps as every step sees them: the optional parts filled with their defaults. */
export type StepDeps = TaskStepsDeps & Required<Pick<TaskStepsDeps, "logger">>;

export function withDefaults(deps: TaskStepsDeps): StepDeps {
  return {
    ...deps,
    logger: deps.logger ?? silentLogger,
  };
}
