import { describe, expect, it } from "vitest";
import { parseAccessPolicy } from "../../src/adapters/grpc/access-policy-source.js";
import {
  type AccessPolicy,
  checkAccessPolicy,
  globMatches,
  type Principal,
  scopeCovers,
} from "../../src/domain/access-policy.js";
import { checkRacks, decide, principalName } from "../../src/domain/authorization.js";
import { canonicalDn } from "../../src/domain/distinguished-name.js";
import { InputFileError } from "../../src/domain/input-file.js";
import { DEFAULT_ROLES, PERMISSIONS, RPC_PERMISSIONS } from "../../src/domain/permissions.js";
import { FlowService } from "../../src/gen/flow/v1/flow.js";
import { FlowInventoryAdminService } from "../../src/gen/flowadmin/v1/admin.js";

const served = [...Object.values(FlowService), ...Object.values(FlowInventoryAdminService)].map(
  (m) => m.path,
);

function policyOf(document: unknown): AccessPolicy {
  const checked = checkAccessPolicy(document);
  if (!checked.ok) throw new Error(JSON.stringify(checked.problems));
  return checked.policy;
}

const cert = (fields: Partial<Principal>): Principal => ({
  authenticated: true,
  subjectAltNames: [],
  ...fields,
});
const declared = (name: string): Principal => ({
  authenticated: false,
  subjectAltNames: [],
  declaredName: name,
});

describe("permissions: one table for every RPC the front serves", () => {
  it("every RPC of Flow and of the admin service has exactly one entry, and the table names no other", () => {
    const missing = served.filter((path) => RPC_PERMISSIONS[path] === undefined);
    expect(missing, "RPCs without a permission: add them to src/domain/permissions.ts").toEqual([]);
    expect(Object.keys(RPC_PERMISSIONS).sort()).toEqual([...served].sort());
  });

  it("every entry names a known permission; the default roles hold only known permissions", () => {
    for (const entry of Object.values(RPC_PERMISSIONS))
      expect([...PERMISSIONS, "anyone"]).toContain(entry.permission);
    // Only WhoAmI is answered to anyone (a caller's own identity and grants).
    expect(Object.keys(RPC_PERMISSIONS).filter((p) => RPC_PERMISSIONS[p]!.permission === "anyone")).toEqual([
      "/v1.Flow/WhoAmI",
    ]);
    for (const ps of Object.values(DEFAULT_ROLES)) for (const p of ps) expect(PERMISSIONS).toContain(p);
    expect(DEFAULT_ROLES.admin).toEqual(PERMISSIONS);
  });
});

describe("access policy: parsing, every problem named", () => {
  it("the issue's form parses (YAML), with its scope", () => {
    const policy = parseAccessPolicy(
      "p.yaml",
      `bindings:
  - subjects: ["uri:spiffe://example.org/ops/*", "cn:ops-bastion"]
    roles: [operator]
    scope: { datacenters: [dc1], rows: [A, B] }
  - subjects: ["cn:auditor"]
    roles: [viewer]
`,
    );
    expect(policy.bindings[0]).toMatchObject({
      subjects: [
        { kind: "uri", value: "spiffe://example.org/ops/", prefix: true },
        { kind: "cn", value: "ops-bastion" },
      ],
      roles: ["operator"],
      scope: { datacenters: ["dc1"], rows: ["A", "B"] },
    });
    expect([...policy.bindings[0]!.permissions].sort()).toEqual(["operate", "read"]);
    expect(policy.allowDeclared).toBe(false);
  });

  it("JSON parses too", () => {
    const policy = parseAccessPolicy(
      "p.json",
      '{"bindings":[{"subjects":["dns:a.example.com"],"roles":["admin"]}]}',
    );
    expect(policy.bindings[0]!.subjects).toEqual([{ kind: "dns", value: "a.example.com" }]);
  });

  it("a bad policy is refused with every problem, each with its path", () => {
    let error: unknown;
    try {
      parseAccessPolicy(
        "p.yaml",
        `roles:
  auditor: [read, audit]
  admin: [read]
bindings:
  - subjects: []
    roles: [operater]
  - subjects: ["", "cn:a*", "host:x", "uri:spiffe://x/*/y"]
    roles: [auditor]
    scope: { datacenter: [dc1] }
approval: { minRacks: 0, racks: 20 }
allowDeclared: "yes"
`,
      );
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InputFileError);
    expect((error as Error).message.split("\n")).toEqual([
      'p.yaml: roles.auditor[1]: must be one of read, operate, override, approve, administer (got "audit")',
      "p.yaml: roles.admin: is a built-in role (viewer, operator, approver, admin) and cannot be redefined",
      "p.yaml: bindings[0].subjects: must not be empty",
      'p.yaml: bindings[0].roles[0]: unknown role "operater" (roles: viewer, operator, approver, admin, auditor)',
      "p.yaml: bindings[1].subjects[0]: must not be empty",
      "p.yaml: bindings[1].subjects[1]: a cn subject matches exactly: no '*' (got \"cn:a*\")",
      'p.yaml: bindings[1].subjects[2]: must be uri:<URI SAN>, dns:<DNS SAN> or cn:<common name> (got "host:x")',
      "p.yaml: bindings[1].subjects[3]: a URI subject may hold '*' only at its end",
      "p.yaml: bindings[1].scope.datacenter: unknown field (allowed: datacenters, rows, nvlDomains, racks)",
      "p.yaml: allowDeclared: must be true or false",
      "p.yaml: approval.racks: unknown field (allowed: minRacks)",
      "p.yaml: approval.minRacks: must be from 1 to 100000 (got 0)",
    ]);
  });

  it("the two-person rule: approval.minRacks is read; absent, no rule; not a whole number or not an object, refused", () => {
    const yaml = `bindings:
  - subjects: ["cn:auditor"]
    roles: [viewer]
approval: { minRacks: 20 }
`;
    expect(parseAccessPolicy("p.yaml", yaml).approval).toEqual({ minRacks: 20 });
    expect(policyOf({ bindings: [] }).approval).toBeUndefined();
    const problemsOf = (approval: unknown) => {
      const checked = checkAccessPolicy({ bindings: [], approval });
      return checked.ok ? [] : checked.problems.map((p) => `${p.path}: ${p.rule}`);
    };
    expect(problemsOf({ minRacks: 2.5 })).toEqual([
      "approval.minRacks: must be a non-negative integer (got 2.5)",
    ]);
    expect(problemsOf({})).toEqual(["approval.minRacks: missing required field"]);
    expect(problemsOf(20)).toEqual(["approval: must be an object (got number)"]);
    expect(problemsOf({ minRacks: 100_001 })).toEqual([
      "approval.minRacks: must be from 1 to 100000 (got 100001)",
    ]);
  });

  it("more shapes refused: not an object, a binding not an object, lists that are not lists, empty names and scopes", () => {
    const problemsOf = (document: unknown) => {
      const checked = checkAccessPolicy(document);
      return checked.ok ? [] : checked.problems.map((p) => `${p.path}: ${p.rule}`);
    };
    expect(problemsOf(["a"])).toEqual(["(root): must be an object (got array)"]);
    expect(
      problemsOf({
        roles: { Auditor: ["read"], lister: "read", none: [] },
        bindings: ["x", { subjects: "cn:a", roles: ["viewer"], scope: "dc1" }],
      }),
    ).toEqual([
      "roles.Auditor: a role name must be lowercase letters, digits and '-', starting with a letter",
      "roles.lister: must be an array (got string)",
      "roles.none: must name at least one permission",
      "bindings[0]: must be an object (got string)",
      "bindings[1].subjects: must be an array (got string)",
      "bindings[1].scope: must be an object (got string)",
    ]);
    expect(
      problemsOf({
        roles: ["auditor"],
        bindings: [{ subjects: ["cn:", "uri:*"], roles: ["viewer"], scope: {} }],
      }),
    ).toEqual([
      "roles: must be an object (got array)",
      'bindings[0].subjects[0]: must name a subject after "cn:" (got "cn:")',
      'bindings[0].subjects[1]: must name a subject after "uri:" (got "uri:*")',
      "bindings[0].scope: must name at least one of datacenters, rows, nvlDomains, racks (omit scope for every rack)",
    ]);
    expect(problemsOf({ bindings: [], allowDeclared: true })).toEqual([]);
    expect(policyOf({ bindings: [], allowDeclared: true }).allowDeclared).toBe(true);
  });

  it("text that is neither YAML nor JSON is refused", () => {
    expect(() => parseAccessPolicy("p.yaml", "bindings: [")).toThrow(
      /^p\.yaml: \(root\): is not valid YAML or JSON/,
    );
  });
});

describe("authorization: decisions", () => {
  const policy = policyOf({
    roles: { auditor: ["read"] },
    bindings: [
      { subjects: ["uri:spiffe://example.org/ops/*"], roles: ["operator"], scope: { datacenters: ["dc1"] } },
      { subjects: ["uri:spiffe://example.org/exact"], roles: ["admin"] },
      { subjects: ["dns:viewer.example.com"], roles: ["viewer"] },
      { subjects: ["cn:auditor"], roles: ["auditor"] },
    ],
  });
  const CREATE = "/v1.Flow/CreateOperationRun";

  it("a URI subject with '*' matches by prefix; without, exactly", () => {
    expect(
      decide(policy, cert({ subjectAltNames: ["URI:spiffe://example.org/ops/bob"] }), CREATE, false).allowed,
    ).toBe(true);
    expect(
      decide(policy, cert({ subjectAltNames: ["URI:spiffe://example.org/exact/x"] }), CREATE, false),
    ).toMatchObject({
      allowed: false,
      code: "PERMISSION_DENIED",
    });
  });

  it("a DNS SAN and a CN match exactly; a CN is not matched against SANs", () => {
    expect(
      decide(policy, cert({ subjectAltNames: ["DNS:viewer.example.com"] }), "/v1.Flow/Version", false)
        .allowed,
    ).toBe(true);
    expect(decide(policy, cert({ commonName: "auditor" }), "/v1.Flow/Version", false).allowed).toBe(true);
    expect(
      decide(policy, cert({ subjectAltNames: ["DNS:auditor"] }), "/v1.Flow/Version", false).allowed,
    ).toBe(false);
  });

  it("a declared name grants nothing (UNAUTHENTICATED), unless allowDeclared, when it matches cn: subjects", () => {
    expect(decide(policy, declared("auditor"), "/v1.Flow/Version", false)).toEqual({
      allowed: false,
      code: "UNAUTHENTICATED",
      message:
        'Version needs a verified client certificate; the caller has none (declared name "auditor" is not proof)',
    });
    const open = { ...policy, allowDeclared: true };
    expect(decide(open, declared("auditor"), "/v1.Flow/Version", false).allowed).toBe(true);
    expect(decide(open, declared("spiffe://example.org/exact"), "/v1.Flow/Version", false)).toMatchObject({
      allowed: false,
      code: "PERMISSION_DENIED",
    });
  });

  it("the denial names the actor, the permission, what, and the roles with it (custom roles included)", () => {
    expect(decide(policy, cert({ commonName: "auditor" }), CREATE, false)).toEqual({
      allowed: false,
      code: "PERMISSION_DENIED",
      permission: "operate",
      message: "auditor may not operate operation runs; roles with it: operator, admin",
    });
    expect(decide(policy, cert({ commonName: "nobody" }), "/v1.Flow/Version", false)).toMatchObject({
      message: "nobody may not read the version; roles with it: viewer, operator, approver, admin, auditor",
    });
  });

  it("the caller is named by its CN, else its first SAN, else its declared name; an unknown RPC is refused", () => {
    const version = "/v1.Flow/Version";
    const nobody = { ...policy, bindings: [] };
    expect(decide(nobody, cert({ subjectAltNames: ["DNS:a.example.com"] }), version, false)).toMatchObject({
      message:
        "DNS:a.example.com may not read the version; roles with it: viewer, operator, approver, admin, auditor",
    });
    expect(decide(nobody, cert({}), version, false)).toMatchObject({
      message: expect.stringMatching(/^certificate without a name may not read/),
    });
    expect(principalName(declared("bob"))).toBe("bob");
    expect(principalName({ authenticated: false, subjectAltNames: [] })).toBe("anonymous caller");
    expect(decide(policy, { authenticated: false, subjectAltNames: [] }, version, false)).toEqual({
      allowed: false,
      code: "UNAUTHENTICATED",
      message: "Version needs a verified client certificate; the caller has none",
    });
    expect(decide(policy, cert({ commonName: "auditor" }), "/v1.Flow/NoSuchCall", false)).toEqual({
      allowed: false,
      code: "PERMISSION_DENIED",
      message: "NoSuchCall has no permission defined",
    });
  });

  it("WhoAmI is answered to anyone, even a caller with no certificate", () => {
    expect(
      decide(policy, { authenticated: false, subjectAltNames: [] }, "/v1.Flow/WhoAmI", false),
    ).toMatchObject({
      allowed: true,
      permissions: [],
    });
  });

  it("resuming past a safety gate needs override, named as such", () => {
    const ops = cert({ commonName: "o", subjectAltNames: ["URI:spiffe://example.org/ops/o"] });
    expect(decide(policy, ops, "/v1.Flow/ResumeOperationRun", true)).toMatchObject({
      message:
        "o may not override (resume an operation run a safety gate or a conflict timeout paused); roles with it: admin",
    });
  });

  it("an override needs the override permission on top of operate", () => {
    const ops = cert({ commonName: "o", subjectAltNames: ["URI:spiffe://example.org/ops/o"] });
    expect(decide(policy, ops, CREATE, true)).toMatchObject({
      allowed: false,
      permission: "override",
      message:
        "o may not override (set override_readiness_check or override_version_check); roles with it: admin",
    });
  });

  it("racks outside every binding's scope are refused, how many and the first five named", () => {
    const ops = cert({ commonName: "o", subjectAltNames: ["URI:spiffe://example.org/ops/o"] });
    const decision = decide(policy, ops, CREATE, false);
    if (!decision.allowed) throw new Error("expected allowed");
    const racks = [
      { name: "in", datacenter: "dc1" },
      ...Array.from({ length: 7 }, (_, i) => ({ name: `out-${i}`, datacenter: "dc2" })),
      { name: "nowhere" },
    ];
    expect(checkRacks(ops, decision, racks)).toBe(
      "o may not operate operation runs: 8 of 9 racks outside its scope: nowhere, out-0, out-1, out-2, out-3 and 3 more",
    );
    expect(checkRacks(ops, decision, racks.slice(0, 1))).toBeUndefined();
    expect(checkRacks(ops, decision, racks.slice(0, 2))).toBe(
      "o may not operate operation runs: 1 of 2 racks outside its scope: out-0",
    );
  });
});

describe("scopes", () => {
  it("every dimension given must match; any value within one", () => {
    const scope = { datacenters: ["dc1"], rows: ["A", "B"], nvlDomains: ["nvl-1"], racks: ["gb200-*"] };
    const rack = { name: "gb200-007", datacenter: "dc1", row: "B", nvlDomain: "nvl-1" };
    expect(scopeCovers(scope, rack)).toBe(true);
    expect(scopeCovers(scope, { ...rack, row: "C" })).toBe(false);
    expect(scopeCovers(scope, { ...rack, datacenter: undefined })).toBe(false);
    expect(scopeCovers(scope, { ...rack, nvlDomain: "nvl-2" })).toBe(false);
    expect(scopeCovers(scope, { ...rack, name: "h100-1" })).toBe(false);
    expect(scopeCovers(undefined, { name: "any" })).toBe(true);
  });

  it("a rack-name glob: '*' any run, '?' one character, the rest literal", () => {
    expect(globMatches("r-?.a*", "r-1.abc")).toBe(true);
    expect(globMatches("r-?.a*", "r-12.abc")).toBe(false);
    expect(globMatches("r-?.a*", "r-1xabc")).toBe(false);
  });
});

describe("an identity is issuer + subject: a binding's issuers", () => {
  const OPS_CA = "C = US, O = Example, CN = Ops CA";
  const policy = policyOf({
    bindings: [
      { subjects: ["cn:alice"], roles: ["operator"], issuers: [OPS_CA] },
      { subjects: ["cn:auditor"], roles: ["viewer"] },
    ],
  });
  const CREATE = "/v1.Flow/CreateOperationRun";
  const opsIssuer = canonicalDn("CN=Ops CA\nO=Example\nC=US");
  const otherIssuer = canonicalDn("CN=Other CA");

  it("issuers are kept in canonical form; a binding without issuers has none", () => {
    expect(policy.bindings[0]?.issuers).toEqual(["C=US, CN=Ops CA, O=Example"]);
    expect(policy.bindings[1]).not.toHaveProperty("issuers");
  });

  it("the same CN from another CA (or without an issuer) is another caller: not named by the binding", () => {
    expect(decide(policy, cert({ commonName: "alice", issuer: opsIssuer }), CREATE, false).allowed).toBe(
      true,
    );
    expect(decide(policy, cert({ commonName: "alice", issuer: otherIssuer }), CREATE, false)).toEqual({
      allowed: false,
      code: "PERMISSION_DENIED",
      permission: "operate",
      message: "alice may not operate operation runs; roles with it: operator, admin",
    });
    expect(decide(policy, cert({ commonName: "alice" }), CREATE, false).allowed).toBe(false);
  });

  it("a declared name has no issuer: a binding with issuers never names it, even with allowDeclared", () => {
    const open = { ...policy, allowDeclared: true };
    expect(decide(open, declared("alice"), CREATE, false).allowed).toBe(false);
    expect(decide(open, declared("auditor"), "/v1.Flow/Version", false).allowed).toBe(true);
  });

  it("a binding without issuers names the subject from any CA", () => {
    for (const issuer of [opsIssuer, otherIssuer]) {
      expect(decide(policy, cert({ commonName: "auditor", issuer }), "/v1.Flow/Version", false).allowed).toBe(
        true,
      );
    }
  });

  it("issuers that are not distinguished names, or an empty list, are refused with their paths", () => {
    expect(
      checkAccessPolicy({
        bindings: [
          { subjects: ["cn:a"], roles: ["viewer"], issuers: ["Ops CA", "CN=", 7] },
          { subjects: ["cn:b"], roles: ["viewer"], issuers: [] },
        ],
      }),
    ).toEqual({
      ok: false,
      problems: [
        {
          path: "bindings[0].issuers[0]",
          rule: 'must be a distinguished name such as "CN=Ops CA, O=Example" (got "Ops CA")',
        },
        {
          path: "bindings[0].issuers[1]",
          rule: 'must be a distinguished name such as "CN=Ops CA, O=Example" (got "CN=")',
        },
        { path: "bindings[0].issuers[2]", rule: "must be a string (got number)" },
        { path: "bindings[1].issuers", rule: "must not be empty" },
      ],
    });
  });
});
