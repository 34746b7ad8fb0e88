/**
 * (ours) The phase soak's configuration (src/domain/soak.ts has what it does): every phase's, and
 * per phase in phase order (an entry overrides `minSoakMs` for its phase). Absent = none, as in
 * every run stored before.
 */
export interface SoakConfig {
  minSoakMs?: number;
  phaseMinSoakMs?: number[];
}
