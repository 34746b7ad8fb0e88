/**
 * Storage ports: the small interfaces the use cases (create run, dispatch, record outcome, gates,
 * controls, tasks, inventory) depend on. The DynamoDB adapter (src/adapters/dynamodb) implements
 * them; test fakes are typed from the same interfaces so they cannot drift.
 *
 * Every method's idempotency and atomicity is part of its contract and is written next to it.
 * Concurrency rule for implementers AND callers: a state change is ONE conditional write (or one
 * transaction) whose condition pins the state the caller saw. Never read, decide, then write
 * unconditionally: two dispatchers (a tick and a stream wake-up) routinely overlap.
 *
 * Outcomes that callers branch on are returned as named values ('claimed' | 'slots-full' | …);
 * only unexpected failures throw.
 *
 * Every port is declared in ports/ (runs, tasks, child tasks, the clock, firmware images) and
 * imported from here.
 */
export * from "./ports/child-tasks.js";
export * from "./ports/clock.js";
export * from "./ports/images.js";
export * from "./ports/runs.js";
export * from "./ports/tasks.js";
