/** The RackLockStore contract (src/app/ports.ts), run against the in-memory fake and DynamoDB on moto. */
import { beforeAll, describe, expect, it } from "vitest";
import type { RackLockStore } from "../../../src/app/ports.js";
import { uuid } from "../dynamodb-fixtures.js";

export function describeRackLockStoreContract(
  name: string,
  setup: () => Promise<{ locks: RackLockStore }>,
): void {
  describe(`RackLockStore contract: ${name}`, () => {
    let locks: RackLockStore;
    beforeAll(async () => {
      ({ locks } = await setup());
    });

    it("acquire; held by another owner; re-acquire extends; release by the owner only, once", async () => {
      const rack = uuid(1, "10c1c000");
      expect(await locks.acquire(rack, "task-a", 60_000, 0)).toBe("acquired");
      expect(await locks.acquire(rack, "task-b", 60_000, 10_000)).toBe("held");
      expect(await locks.acquire(rack, "task-a", 60_000, 20_000)).toBe("acquired");
      expect(await locks.get(rack)).toEqual({ owner: "task-a", expiresAt: 80_000 });
      expect(await locks.release(rack, "task-b")).toBe("not-held");
      expect(await locks.release(rack, "task-a")).toBe("released");
      expect(await locks.release(rack, "task-a")).toBe("not-held");
      expect(await locks.get(rack)).toBeUndefined();
    });

    it("an expired lock is taken over at its expiry; the old owner's release then leaves it alone", async () => {
      const rack = uuid(2, "10c1c000");
      expect(await locks.acquire(rack, "task-a", 1_000, 0)).toBe("acquired");
      expect(await locks.acquire(rack, "task-b", 1_000, 999)).toBe("held");
      expect(await locks.acquire(rack, "task-b", 1_000, 1_000)).toBe("acquired");
      expect(await locks.release(rack, "task-a")).toBe("not-held");
      expect(await locks.get(rack)).toEqual({ owner: "task-b", expiresAt: 2_000 });
    });

    it("8 concurrent acquirers of a free rack: exactly one wins", async () => {
      const rack = uuid(3, "10c1c000");
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, (_, i) => locks.acquire(rack, `task-${i}`, 60_000, 0)),
      );
      expect(outcomes.filter((o) => o === "acquired")).toHaveLength(1);
    });
  });
}
