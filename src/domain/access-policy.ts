/**
 * The access policy: who holds which roles, over which racks. Read from a file a person wrote
 * (YAML or JSON; src/adapters/authz/policy-file.ts parses the text) and checked here, every
 * problem named with its path at once:
 *
 *   roles:                       # optional: more roles, beside viewer, operator, approver, admin
 *     auditor: [read]
 *   bindings:
 *     - subjects: ["uri:spiffe://example.org/ops/*", "cn:ops-bastion"]
 *       roles: [operator]
 *       scope: { datacenters: [dc1], rows: [A, B] }
 *     - subjects: ["cn:auditor"]
 *       roles: [viewer]
 *   allowDeclared: false         # optional; true only for local development
 *   approval: { minRacks: 20 }   # optional: the two-person rule (src/domain/approval.ts)
 *
 * An identity is its issuer and its subject: the same CN under two CAs is two callers. A binding
 * with `issuers: ["CN=Ops CA, O=Example"]` names only certificates one of those CAs issued (the
 * issuer DN of the verified certificate, distinguished-name.ts); without it, a subject from any CA
 * the front trusts. A declared name has no issuer, so a binding with issuers never names one.
 *
 * Subjects match VERIFIED identities only (a client certificate the server or the load balancer
 * verified): `uri:<URI SAN>` exact, or a prefix when it ends in `*`; `dns:<DNS SAN>` exact;
 * `cn:<subject common name>` exact. A name a client merely declares (x-flow-actor) matches nothing,
 * unless `allowDeclared: true`, when it matches `cn:` subjects as if it were a common name (the
 * run history still records it as unauthenticated).
 *
 * A scope narrows a binding to racks: each dimension given must match (datacenters, rows,
 * nvlDomains by name, racks by name glob with `*` and `?`), any value within one. No scope: every
 * rack. Roles and permissions combine across bindings; a rack is covered for a permission when
 * some matching binding both grants the permission and covers the rack.
 */
import { APPROVAL_MIN_RACKS_MAX, type ApprovalRule } from "./approval.js";
import { canonicalDn } from "./distinguished-name.js";
import { Checker, type FileProblem } from "./input-file.js";
import { DEFAULT_ROLES, PERMISSIONS, type Permission } from "./permissions.js";

export type Subject =
  | { kind: "uri"; value: string; prefix: boolean }
  | { kind: "dns"; value: string }
  | { kind: "cn"; value: string };

export interface RackScope {
  datacenters?: string[];
  rows?: string[];
  nvlDomains?: string[];
  /** Rack-name globs (`*` any run of characters, `?` one). */
  racks?: string[];
}

export interface Binding {
  subjects: Subject[];
  roles: string[];
  /** The union of the roles' permissions. */
  permissions: ReadonlySet<Permission>;
  /** Absent: every rack. */
  scope?: RackScope;
  /** Canonical issuer DNs (canonicalDn) a certificate must come from; absent: any trusted CA. */
  issuers?: string[];
}

export interface AccessPolicy {
  /** Every role by name, the defaults first, in the order they are listed. */
  roles: ReadonlyMap<string, readonly Permission[]>;
  bindings: Binding[];
  allowDeclared: boolean;
  /** The two-person rule; absent: no run waits for approval. */
  approval?: ApprovalRule;
}

const TOP_FIELDS = ["roles", "bindings", "allowDeclared", "approval"] as const;
const APPROVAL_FIELDS = ["minRacks"] as const;
const BINDING_FIELDS = ["subjects", "roles", "scope", "issuers"] as const;
const SCOPE_FIELDS = ["datacenters", "rows", "nvlDomains", "racks"] as const;
/** A role name: what a person types in a policy and reads in a denial. */
const ROLE_NAME = /^[a-z][a-z0-9-]{0,62}$/;
const SUBJECT_KINDS = ["uri", "dns", "cn"] as const;

/**
 * The policy of a parsed document, or every problem with it. Unknown fields are problems (an
 * accepted field is acted on), so a misspelt `scopes:` does not silently grant every rack.
 */
export function checkAccessPolicy(
  document: unknown,
): { ok: true; policy: AccessPolicy } | { ok: false; problems: FileProblem[] } {
  const c = new Checker();
  const root = c.object(document, "(root)", TOP_FIELDS);
  if (root === undefined) return { ok: false, problems: c.problems };
  const roles = readRoles(c, root.roles);
  const bindings: Binding[] = [];
  const list = c.array(root.bindings, "bindings");
  list?.forEach((raw, i) => {
    const binding = readBinding(c, raw, `bindings[${i}]`, roles);
    if (binding !== undefined) bindings.push(binding);
  });
  let allowDeclared = false;
  if (root.allowDeclared !== undefined) {
    if (typeof root.allowDeclared === "boolean") allowDeclared = root.allowDeclared;
    else c.problem("allowDeclared", "must be true or false");
  }
  const approval = root.approval === undefined ? undefined : readApproval(c, root.approval);
  if (c.problems.length > 0) return { ok: false, problems: c.problems };
  return {
    ok: true,
    policy: { roles, bindings, allowDeclared, ...(approval === undefined ? {} : { approval }) },
  };
}

/** `approval: { minRacks: N }`, N from 1 (every run needs a second person) to the cap. */
function readApproval(c: Checker, raw: unknown): ApprovalRule | undefined {
  const o = c.object(raw, "approval", APPROVAL_FIELDS);
  if (o === undefined) return undefined;
  const minRacks = c.nonNegativeInteger(o.minRacks, "approval.minRacks");
  if (minRacks === undefined) return undefined;
  if (minRacks < 1 || minRacks > APPROVAL_MIN_RACKS_MAX) {
    c.problem("approval.minRacks", `must be from 1 to ${APPROVAL_MIN_RACKS_MAX} (got ${minRacks})`);
    return undefined;
  }
  return { minRacks };
}

function readRoles(c: Checker, raw: unknown): Map<string, readonly Permission[]> {
  const roles = new Map<string, readonly Permission[]>(Object.entries(DEFAULT_ROLES));
  if (raw === undefined) return roles;
  const defined = c.object(raw, "roles");
  for (const [name, permissions] of Object.entries(defined ?? {})) {
    const path = `roles.${name}`;
    if (name in DEFAULT_ROLES) {
      c.problem(
        path,
        `is a built-in role (${Object.keys(DEFAULT_ROLES).join(", ")}) and cannot be redefined`,
      );
      continue;
    }
    if (!ROLE_NAME.test(name)) {
      c.problem(path, "a role name must be lowercase letters, digits and '-', starting with a letter");
      continue;
    }
    const list = c.array(permissions, path);
    if (list === undefined) continue;
    if (list.length === 0) c.problem(path, "must name at least one permission");
    const checked = list.map((p, i) => c.oneOf(p, `${path}[${i}]`, PERMISSIONS));
    roles.set(
      name,
      checked.filter((p): p is Permission => p !== undefined),
    );
  }
  return roles;
}

function readBinding(
  c: Checker,
  raw: unknown,
  path: string,
  roles: ReadonlyMap<string, readonly Permission[]>,
): Binding | undefined {
  const o = c.object(raw, path, BINDING_FIELDS);
  if (o === undefined) return undefined;
  const before = c.problems.length;
  const subjects = nonEmptyList(c, o.subjects, `${path}.subjects`)
    .map((s, i) => readSubject(c, s, `${path}.subjects[${i}]`))
    .filter((s): s is Subject => s !== undefined);
  const roleNames = nonEmptyList(c, o.roles, `${path}.roles`)
    .map((r, i) => {
      const where = `${path}.roles[${i}]`;
      const name = c.text(r, where);
      if (name !== undefined && !roles.has(name)) {
        c.problem(where, `unknown role ${JSON.stringify(name)} (roles: ${[...roles.keys()].join(", ")})`);
        return undefined;
      }
      return name;
    })
    .filter((r): r is string => r !== undefined);
  const scope = o.scope === undefined ? undefined : readScope(c, o.scope, `${path}.scope`);
  const issuers = o.issuers === undefined ? undefined : readIssuers(c, o.issuers, `${path}.issuers`);
  if (c.problems.length > before) return undefined;
  // Every name was checked against `roles` above.
  const permissions = new Set(roleNames.flatMap((r) => roles.get(r) as readonly Permission[]));
  return {
    subjects,
    roles: roleNames,
    permissions,
    ...(scope === undefined ? {} : { scope }),
    ...(issuers === undefined ? {} : { issuers }),
  };
}

/** `issuers: ["CN=Ops CA, O=Example"]`: each a distinguished name, kept in canonical form. */
function readIssuers(c: Checker, raw: unknown, path: string): string[] {
  return nonEmptyList(c, raw, path)
    .map((v, i) => {
      const where = `${path}[${i}]`;
      const text = c.text(v, where);
      if (text === undefined) return undefined;
      const dn = canonicalDn(text);
      if (dn === undefined) {
        c.problem(
          where,
          `must be a distinguished name such as "CN=Ops CA, O=Example" (got ${JSON.stringify(text)})`,
        );
      }
      return dn;
    })
    .filter((v): v is string => v !== undefined);
}

function nonEmptyList(c: Checker, raw: unknown, path: string): unknown[] {
  const list = c.array(raw, path);
  if (list !== undefined && list.length === 0) c.problem(path, "must not be empty");
  return list ?? [];
}

/** "uri:spiffe://x/*" → a URI prefix; "dns:h.example.com"; "cn:ops". */
function readSubject(c: Checker, raw: unknown, path: string): Subject | undefined {
  const text = c.text(raw, path);
  if (text === undefined) return undefined;
  const colon = text.indexOf(":");
  const kind = text.slice(0, colon);
  const value = text.slice(colon + 1);
  if (colon < 0 || !(SUBJECT_KINDS as readonly string[]).includes(kind)) {
    c.problem(path, `must be uri:<URI SAN>, dns:<DNS SAN> or cn:<common name> (got ${JSON.stringify(text)})`);
    return undefined;
  }
  if (value === "" || value === "*") {
    c.problem(path, `must name a subject after "${kind}:" (got ${JSON.stringify(text)})`);
    return undefined;
  }
  if (kind === "uri") {
    const prefix = value.endsWith("*");
    const body = prefix ? value.slice(0, -1) : value;
    if (body.includes("*")) {
      c.problem(path, "a URI subject may hold '*' only at its end");
      return undefined;
    }
    return { kind: "uri", value: body, prefix };
  }
  if (value.includes("*")) {
    c.problem(path, `a ${kind} subject matches exactly: no '*' (got ${JSON.stringify(text)})`);
    return undefined;
  }
  return { kind: kind as "dns" | "cn", value };
}

function readScope(c: Checker, raw: unknown, path: string): RackScope | undefined {
  const o = c.object(raw, path, SCOPE_FIELDS);
  if (o === undefined) return undefined;
  const scope: RackScope = {};
  for (const field of SCOPE_FIELDS) {
    if (o[field] === undefined) continue;
    const values = nonEmptyList(c, o[field], `${path}.${field}`)
      .map((v, i) => c.text(v, `${path}.${field}[${i}]`))
      .filter((v): v is string => v !== undefined);
    scope[field] = values;
  }
  if (Object.keys(o).length === 0) {
    c.problem(path, `must name at least one of ${SCOPE_FIELDS.join(", ")} (omit scope for every rack)`);
  }
  return scope;
}

// ---------------------------------------------------------------------------------------------
// Matching

/** What authorization knows of a caller: the verified certificate's names, or a declared name. */
export interface Principal {
  /** True for a verified client certificate only. */
  authenticated: boolean;
  /** The certificate subject's CN, if it has one. */
  commonName?: string;
  /** The verified certificate's issuer DN in canonical form (canonicalDn); absent without one. */
  issuer?: string;
  /** `TYPE:value` as in the Actor: "URI:spiffe://…", "DNS:…". */
  subjectAltNames: readonly string[];
  /** The name the caller declared (x-flow-actor), unverified. */
  declaredName?: string;
}

function subjectMatches(subject: Subject, who: Principal, allowDeclared: boolean): boolean {
  if (!who.authenticated) {
    return allowDeclared && subject.kind === "cn" && who.declaredName === subject.value;
  }
  switch (subject.kind) {
    case "cn":
      return who.commonName === subject.value;
    case "dns":
      return who.subjectAltNames.includes(`DNS:${subject.value}`);
    case "uri":
      return who.subjectAltNames.some(
        (san) =>
          san.startsWith("URI:") &&
          (subject.prefix ? san.slice(4).startsWith(subject.value) : san.slice(4) === subject.value),
      );
  }
}

/** Whether the caller's certificate comes from a CA the binding accepts (any, when it names none). */
function issuerMatches(binding: Binding, who: Principal): boolean {
  if (binding.issuers === undefined) return true;
  return who.authenticated && who.issuer !== undefined && binding.issuers.includes(who.issuer);
}

/** The bindings that name the caller: one of its subjects, from one of its issuers. */
export function bindingsOf(policy: AccessPolicy, who: Principal): Binding[] {
  return policy.bindings.filter(
    (b) => issuerMatches(b, who) && b.subjects.some((s) => subjectMatches(s, who, policy.allowDeclared)),
  );
}

/** Whether the policy can grant the caller anything at all: verified, or declared where allowed. */
export function mayBeGranted(policy: AccessPolicy, who: Principal): boolean {
  return who.authenticated || (policy.allowDeclared && who.declaredName !== undefined);
}

/** The roles of the policy that hold `permission`, in the policy's order. */
export function rolesWith(policy: AccessPolicy, permission: Permission): string[] {
  return [...policy.roles].filter(([, ps]) => ps.includes(permission)).map(([name]) => name);
}

/** A rack as scopes see it. */
export interface RackPlace {
  name: string;
  datacenter?: string;
  row?: string;
  nvlDomain?: string;
}

export function scopeCovers(scope: RackScope | undefined, rack: RackPlace): boolean {
  if (scope === undefined) return true;
  const within = (values: string[] | undefined, value: string | undefined) =>
    values === undefined || (value !== undefined && values.includes(value));
  return (
    within(scope.datacenters, rack.datacenter) &&
    within(scope.rows, rack.row) &&
    within(scope.nvlDomains, rack.nvlDomain) &&
    (scope.racks === undefined || scope.racks.some((glob) => globMatches(glob, rack.name)))
  );
}

/** `*` any run of characters, `?` exactly one; everything else literal. */
export function globMatches(glob: string, name: string): boolean {
  const pattern = glob
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${pattern}$`, "s").test(name);
}

/** The racks no binding with every one of `permissions` covers, in the order given. */
export function racksOutside(
  bindings: readonly Binding[],
  permissions: readonly Permission[],
  racks: readonly RackPlace[],
): RackPlace[] {
  return racks.filter(
    (rack) =>
      !permissions.every((p) => bindings.some((b) => b.permissions.has(p) && scopeCovers(b.scope, rack))),
  );
}

/** How many racks a scope denial names before "…". */
export const RACKS_NAMED = 5;

/**
 * "3 of 40 racks outside its scope: r1, r2, r3": the first few by name (a plan's order is seeded,
 * so it varies between calls; names sorted read the same every time), then "and N more".
 */
export function describeOutside(outside: readonly RackPlace[], of: number): string {
  const named = outside
    .map((r) => r.name)
    .sort()
    .slice(0, RACKS_NAMED);
  const more = outside.length > RACKS_NAMED ? ` and ${outside.length - RACKS_NAMED} more` : "";
  return `${outside.length} of ${of} racks outside its scope: ${named.join(", ")}${more}`;
}
