/**
 * A whole-rack AC cycle (an AC_CYCLE step with `acScope: RACK`): ONE reset of kind `rack`, sent to
 * the rack's power shelf (its POWERSHELF component in the inventory), stands for the wave's
 * components: the shelf drops and restores the rack's power, so every component of the rack is
 * reset, and the shelf answers for itself once back. The step's verdict is the shelf's; the
 * stage's WAIT_BRING_UP after it (operation-rules.ts requires one) reads every component back.
 * The preflight finds the shelf too, so a rack without one is refused before anything is flashed.
 */
import type { InventoryComponent } from "../../domain/inventory.js";
import type { RuleStep } from "../../domain/model.js";
import { StepError } from "../../domain/step-errors.js";
import type { StepDeps } from "./deps.js";

export const isRackCycle = (step: Pick<RuleStep, "action" | "acScope">): boolean =>
  step.action === "AC_CYCLE" && step.acScope === "RACK";

/**
 * The power shelf a rack's AC cycle goes through: the rack's POWERSHELF component (of several, the
 * first by id, so a retry asks the same one). A rack without one: NoPowerShelf, naming the rack.
 */
export async function powerShelfOf(deps: Pick<StepDeps, "readiness">, rackId: string): Promise<string> {
  return shelfIn(rackId, await deps.readiness.rackComponents(rackId));
}

/** powerShelfOf over the rack's components already read (the preflight's: no read). */
export function shelfIn(
  rackId: string,
  components: readonly Pick<InventoryComponent, "id" | "type">[],
): string {
  const shelves = components
    .filter((c) => c.type === "POWERSHELF")
    .map((c) => c.id)
    .sort();
  const shelf = shelves[0];
  if (shelf === undefined) {
    throw new StepError(
      "NoPowerShelf",
      `rack ${rackId} has no POWERSHELF component: a whole-rack AC cycle (ac_scope RACK) goes through the rack's power shelf`,
    );
  }
  return shelf;
}
