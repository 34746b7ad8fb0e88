/**
 * The product's Logger and Metrics (src/app/observability.ts) on Powertools for AWS Lambda: one JSON
 * line per log entry (level, message, timestamp, service, the Lambda context and the invocation's
 * correlation keys once src/adapters/observability/lambda.ts adds them, then the entry's fields),
 * and CloudWatch Embedded Metric Format lines that Powertools validates (names, units, values).
 * Both work outside Lambda too: the Fargate front uses them as they are.
 *
 * Metrics keep exactly what the dashboard and alarms read (infra/constructs/observability.ts):
 * namespace `Flow` and ONE dimension, `Service`, naming the emitter. Powertools adds a lower-case
 * `service` dimension of its own by default; CloudWatch dimensions are case-sensitive and a metric
 * with a second dimension is a different metric, so that default is replaced by `Service` alone.
 */
import { Logger as PowertoolsLogger } from "@aws-lambda-powertools/logger";
import { Metrics as PowertoolsMetrics } from "@aws-lambda-powertools/metrics";
import { FLOW_METRIC_NAMESPACE, type Logger, type Metrics, metricUnit } from "../../app/observability.js";

export interface PowertoolsObservability {
  logger: Logger;
  metrics: Metrics;
  /** The Powertools instances behind them, for the Lambda handler (context, invocation keys, cold start). */
  powertools: { logger: PowertoolsLogger; metrics: PowertoolsMetrics };
}

/** A Metrics instance under namespace `Flow` whose only default dimension is `Service: service`. */
export function flowPowertoolsMetrics(
  service: string,
  options: { singleMetric?: boolean } = {},
): PowertoolsMetrics {
  const metrics = new PowertoolsMetrics({
    namespace: FLOW_METRIC_NAMESPACE,
    serviceName: service,
    ...(options.singleMetric === true ? { singleMetric: true } : {}),
  });
  metrics.clearDefaultDimensions();
  metrics.setDefaultDimensions({ Service: service });
  return metrics;
}

/**
 * Powertools drops a field named like one of its own keys (level, message, sampling_rate, service,
 * timestamp) and logs a warning instead; such a field is kept here as `field_<key>`.
 */
const RESERVED = new Set(["level", "message", "sampling_rate", "service", "timestamp"]);

export function powertoolsLogger(logger: PowertoolsLogger): Logger {
  const extra = (fields: Record<string, unknown> | undefined) =>
    fields === undefined
      ? []
      : [Object.fromEntries(Object.entries(fields).map(([k, v]) => [RESERVED.has(k) ? `field_${k}` : k, v]))];
  return {
    info: (message, fields) => logger.info(message, ...extra(fields)),
    warn: (message, fields) => logger.warn(message, ...extra(fields)),
    error: (message, fields) => logger.error(message, ...extra(fields)),
  };
}

/**
 * Values added under one name between two flushes go out as one EMF array (each a data point, so
 * Sum adds them and the latency percentiles see each pass on its own).
 */
export function powertoolsMetrics(metrics: PowertoolsMetrics): Metrics {
  return {
    add(name, value) {
      metrics.addMetric(name, metricUnit(name), value);
    },
    flush() {
      if (metrics.hasStoredMetrics()) metrics.publishStoredMetrics();
    },
  };
}

/** One logger and one metrics sink for the deployable named `service` (the `Service` dimension). */
export function powertoolsObservability(service: string): PowertoolsObservability {
  const logger = new PowertoolsLogger({ serviceName: service });
  const metrics = flowPowertoolsMetrics(service);
  return {
    logger: powertoolsLogger(logger),
    metrics: powertoolsMetrics(metrics),
    powertools: { logger, metrics },
  };
}
