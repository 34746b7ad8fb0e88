/**
 * Upper bounds on what one request may carry. None is a product rule (the planner caps a run at 100
 * candidate racks anyway); they exist so that a buggy or hostile client gets a clear InvalidArgument
 * naming the field instead of making the server allocate, sort and store something absurd. Each is
 * one or two orders of magnitude above any real request: a 100-rack run needs at most 100 target
 * entries and 100 phases. The 4 MiB receive limit of the server bounds the rest.
 */
export const LIMITS = {
  /** Characters. A run name is a label in a list, not a document. */
  name: 256,
  /**
   * Characters of every other label a request carries: a ListOperationRuns name pattern, and an
   * inventory rack's name, external id, NVLink domain name, datacenter and row, a component's
   * external id, firmware version, model and vendor.
   */
  label: 256,
  /** Characters of one sub_targets entry (the longest part name is a few letters). */
  subTarget: 64,
  /** Characters: run, firmware and cancel-reason descriptions. */
  description: 4096,
  /** Characters: selector and ordering seeds (a generated seed is a 36-character UUID). */
  seed: 256,
  /** Characters of a maintenance window's cron: five short fields. */
  cron: 256,
  /** Characters of a failure-domain spread's attribute name. */
  attribute: 256,
  /** Safety gates per run; gates OR together, so more than a handful is a mistake. */
  gates: 32,
  /** Phases per run, for every plan kind (equal phase_count included). */
  phases: 100,
  /** Entries of a target spec or of a component filter. */
  targetSpecEntries: 1000,
  /** component_types of one target entry: there are six component types. */
  componentTypesPerEntry: 16,
  /** sub_targets of a firmware request. */
  subTargets: 100,
  /** Name patterns of a ListOperationRuns filter. */
  patterns: 100,
  /** State entries and operation kinds of a ListOperationRuns filter, each. */
  filterEntries: 100,
  /** exclude_operation_run_ids of a target scope. */
  excludeRunIds: 100,
  /** task_ids of one GetTasksByIDs call. */
  taskIds: 1000,
  /** Racks of one ImportInventory call, and components of one rack. */
  inventoryRacks: 1000,
  componentsPerRack: 1000,
} as const;
