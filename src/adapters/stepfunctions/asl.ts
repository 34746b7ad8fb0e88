/**
 * The child-task definition as data: state-machines/child-task.asl.json, the ONE file both the CDK
 * app (DefinitionSubstitutions fills `${TaskStepsFunctionArn}`) and the local runner use.
 */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

// biome-ignore lint/suspicious/noTemplateCurlyInString: the literal placeholder CloudFormation substitutes.
export const TASK_STEPS_PLACEHOLDER = "${TaskStepsFunctionArn}";

export const CHILD_TASK_ASL_PATH = join(
  dirname(fileURLToPath(import.meta.url)),
  "..",
  "..",
  "..",
  "state-machines",
  "child-task.asl.json",
);

export interface AslState {
  Type: string;
  Resource?: string;
  Parameters?: Record<string, unknown>;
  ItemProcessor?: AslMachine;
  Iterator?: AslMachine;
  Branches?: AslMachine[];
  [other: string]: unknown;
}

export interface AslMachine {
  StartAt: string;
  States: Record<string, AslState>;
  [other: string]: unknown;
}

/** The definition with the Lambda placeholder replaced by `functionArn`. */
export function loadChildTaskDefinition(
  functionArn = "arn:aws:lambda:us-east-1:000000000000:function:flow-task-steps",
  path = CHILD_TASK_ASL_PATH,
): AslMachine {
  const text = readFileSync(path, "utf8").split(TASK_STEPS_PLACEHOLDER).join(functionArn);
  return JSON.parse(text) as AslMachine;
}

/** Every state of the machine, nested Map and Parallel bodies included, with its name. */
export function allStates(machine: AslMachine): [string, AslState][] {
  const out: [string, AslState][] = [];
  for (const [name, state] of Object.entries(machine.States)) {
    out.push([name, state]);
    const nested = [state.ItemProcessor, state.Iterator, ...(state.Branches ?? [])];
    for (const body of nested) if (body !== undefined) out.push(...allStates(body));
  }
  return out;
}

/** Names of every Task state (aws-local-stepfunctions binds local handlers by state name). */
export function taskStateNames(machine: AslMachine): string[] {
  return allStates(machine)
    .filter(([, s]) => s.Type === "Task")
    .map(([name]) => name);
}

/**
 * Names of every Task state of the callback pattern (`….waitForTaskToken`): it ends when its task
 * token is sent back (SendTaskSuccess), not when its Lambda returns.
 */
export function callbackStateNames(machine: AslMachine): string[] {
  return allStates(machine)
    .filter(([, s]) => isCallbackState(s))
    .map(([name]) => name);
}

export const isCallbackState = (s: AslState): boolean =>
  s.Type === "Task" && (s.Resource ?? "").endsWith(".waitForTaskToken");

/** Names of every Wait state. */
export function waitStateNames(machine: AslMachine): string[] {
  return allStates(machine)
    .filter(([, s]) => s.Type === "Wait")
    .map(([name]) => name);
}
