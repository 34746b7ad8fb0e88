/**
 * The firmware credential the tests hand to the product and then look for where it must never be:
 * task items, reports, request records, responses, BMC commands (only sealed), log lines.
 */
export const CREDENTIAL_CANARY = "hunter2-bmc-password";
