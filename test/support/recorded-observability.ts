/**
 * A logger and metrics that keep what they are given, for asserting the exact lines and counts
 * (`level message {fields}`, `Name=value`).
 */
import type { Logger, Metrics } from "../../src/app/observability.js";

export function recordedObservability() {
  const lines: string[] = [];
  const metrics: string[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const logger: Logger = { info: at("info"), warn: at("warn"), error: at("error") };
  const meter: Metrics = { add: (name, value) => metrics.push(`${name}=${value}`), flush: () => {} };
  return { lines, metrics, logger, meter };
}
