/** (ours) Which failure domain a rack belongs to (src/domain/failure-domains.ts), and the cap. */
export type FailureDomainKind = "ROW" | "NVL_DOMAIN" | "ATTRIBUTE";
export interface FailureDomainSpread {
  kind: FailureDomainKind;
  /** The inventory attribute's name, for ATTRIBUTE only. */
  attribute?: string;
  maxInFlight: number;
}
