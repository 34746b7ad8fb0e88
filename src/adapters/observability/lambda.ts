/**
 * Observability of a Lambda function: the deployable's Powertools logger and metrics
 * (./powertools.ts), the X-Ray tracer around its AWS SDK clients, and the handler wrapper that
 * gives every invocation its context:
 *   - the logger gets the Lambda context (function name, request id, cold start) and the
 *     correlation keys the event names (run id, task id) on every line of the invocation, and
 *     forgets those keys when it ends (a warm container's next event is another task);
 *   - the first invocation of a container emits one `ColdStart` metric (namespace `Flow`,
 *     dimensions `Service` and `function_name`);
 *   - in AWS (tracing ACTIVE), a `## handler` subsegment annotated with the cold start, the
 *     service and the correlation keys (searchable in X-Ray), the SDK calls as its subsegments and
 *     a thrown error as its metadata. Off AWS the tracer switches itself off: nothing is captured
 *     and `capture` returns the client unchanged.
 * Events and responses are never logged or traced: BMC reports and step results are not for logs.
 */
import { Tracer } from "@aws-lambda-powertools/tracer";
import type { Context } from "aws-lambda";
import type { CorrelationKeys } from "../../app/observability.js";
import {
  flowPowertoolsMetrics,
  type PowertoolsObservability,
  powertoolsObservability,
} from "./powertools.js";

export interface LambdaObservability extends PowertoolsObservability {
  /** The client, its calls traced as X-Ray subsegments when tracing is on. */
  capture<C>(client: C): C;
  /** Runs one invocation's work, `keys` being what its event names (see above). */
  invoke<R>(context: Context, keys: CorrelationKeys, work: () => Promise<R>): Promise<R>;
}

export function lambdaObservability(service: string): LambdaObservability {
  const base = powertoolsObservability(service);
  const { logger } = base.powertools;
  const tracer = new Tracer({ serviceName: service });
  const coldStartMetric = flowPowertoolsMetrics(service, { singleMetric: true });
  let coldStart = true;

  return {
    ...base,
    capture: (client) => tracer.captureAWSv3Client(client),
    async invoke(context, keys, work) {
      const defined = Object.entries(keys).filter((e): e is [string, string] => typeof e[1] === "string");
      logger.addContext(context);
      logger.appendKeys(Object.fromEntries(defined));
      if (coldStart) {
        coldStart = false;
        coldStartMetric.addDimension("function_name", context.functionName);
        coldStartMetric.addMetric("ColdStart", "Count", 1);
      }
      const segment = tracer.isTracingEnabled() ? tracer.getSegment() : undefined;
      const subsegment = segment?.addNewSubsegment("## handler");
      if (segment !== undefined && subsegment !== undefined) {
        tracer.setSegment(subsegment);
        tracer.annotateColdStart();
        tracer.addServiceNameAnnotation();
        for (const [key, value] of defined) tracer.putAnnotation(key, value);
      }
      try {
        return await work();
      } catch (error) {
        if (subsegment !== undefined) tracer.addErrorAsMetadata(error as Error);
        throw error;
      } finally {
        if (segment !== undefined && subsegment !== undefined) {
          subsegment.close();
          tracer.setSegment(segment);
        }
        logger.resetKeys();
      }
    },
  };
}
