/**
 * Logging and metrics for every service of the product: a small Logger (JSON lines on AWS, a line
 * sink locally, silence in tests) and CloudWatch Embedded Metric Format metrics under the names
 * the dashboard reads.
 */

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

/**
 * A Logger over a line sink (the local stack's `log(line)`): `warn dispatch pass failed runId=… error=…`.
 */
export function lineLogger(log: (line: string) => void): Logger {
  const line = (level: string, message: string, fields?: Record<string, unknown>) => {
    const rest = Object.entries(fields ?? {})
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
      .join(" ");
    log(`${level} ${message}${rest === "" ? "" : ` ${rest}`}`);
  };
  return {
    info: (message, fields) => line("info", message, fields),
    warn: (message, fields) => line("warn", message, fields),
    error: (message, fields) => line("error", message, fields),
  };
}

/** `logger` wins, then a line sink, else silence. */
export function pickLogger(options: {
  logger?: Logger | undefined;
  log?: ((line: string) => void) | undefined;
}): Logger {
  if (options.logger !== undefined) return options.logger;
  return options.log === undefined ? silentLogger : lineLogger(options.log);
}

/** One JSON line per entry on stdout/stderr (what CloudWatch Logs indexes best). */
export const jsonLogger: Logger = {
  info: (message, fields) => console.log(JSON.stringify({ level: "info", message, ...fields })),
  warn: (message, fields) => console.warn(JSON.stringify({ level: "warn", message, ...fields })),
  error: (message, fields) => console.error(JSON.stringify({ level: "error", message, ...fields })),
};

/**
 * The product's EMF metric names (namespace `Flow`, dimension `Service`): exactly the names the
 * dashboard and alarms read (infra/constructs/observability.ts FLOW_METRICS; a test keeps the two
 * equal), each with an emitter: the dispatcher (TargetsDispatched, RackConflicts, GateTrips,
 * DispatchLatencyMs, TickOverrunMs) and the task outcome recorder in src/app/child-task/outcome.ts (the rest).
 */
export const FLOW_METRIC_NAMES = [
  "TargetsDispatched",
  "RackConflicts",
  "GateTrips",
  "DispatchLatencyMs",
  "TickOverrunMs",
  "TargetsCompleted",
  "TargetsFailed",
  "TargetsTerminated",
  "BmcFailures",
] as const;

export type DispatchMetricName = (typeof FLOW_METRIC_NAMES)[number];

export interface Metrics {
  add(name: DispatchMetricName, value: number): void;
  /** Writes what was added since the last flush (EMF: one log line); a no-op when nothing was. */
  flush(): void;
}

export const noopMetrics: Metrics = { add() {}, flush() {} };

/**
 * CloudWatch Embedded Metric Format: one JSON log line per flush, which CloudWatch turns into
 * metrics without any API call. Example line:
 *   {"_aws":{"Timestamp":1700000000000,"CloudWatchMetrics":[{"Namespace":"Flow","Dimensions":[["Service"]],
 *    "Metrics":[{"Name":"TargetsDispatched","Unit":"Count"}]}]},"Service":"dispatcher","TargetsDispatched":4}
 */
export function emfMetrics(options: {
  namespace?: string;
  service: string;
  clock?: () => number;
  write?: (line: string) => void;
}): Metrics {
  const write = options.write ?? ((line: string) => console.log(line));
  const clock = options.clock ?? Date.now;
  let values = new Map<DispatchMetricName, number>();
  return {
    add(name, value) {
      values.set(name, (values.get(name) ?? 0) + value);
    },
    flush() {
      if (values.size === 0) return;
      const names = [...values.keys()];
      const line: Record<string, unknown> = {
        _aws: {
          Timestamp: clock(),
          CloudWatchMetrics: [
            {
              Namespace: options.namespace ?? "Flow",
              Dimensions: [["Service"]],
              Metrics: names.map((Name) => ({ Name, Unit: Name.endsWith("Ms") ? "Milliseconds" : "Count" })),
            },
          ],
        },
        Service: options.service,
      };
      for (const [name, value] of values) line[name] = value;
      values = new Map();
      write(JSON.stringify(line));
    },
  };
}

export function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
