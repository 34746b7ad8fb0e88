/** The caller of an operator action (src/domain/actor.ts) on the wire: OperationRunActor. */
import type { Actor } from "../../../domain/actor.js";
import type * as pb from "../../../gen/flow/v1/flow.js";
import { actorSourceToProto } from "./enums.js";

export function actorToProto(actor: Actor): pb.OperationRunActor {
  return {
    name: actor.name,
    source: actorSourceToProto(actor.source),
    authenticated: actor.authenticated,
    subjectAltNames: [...actor.subjectAltNames],
    declaredName: actor.declaredName ?? "",
    issuer: actor.issuer ?? "",
  };
}
