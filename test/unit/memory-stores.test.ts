/**
 * The in-memory fakes against the same contract suites as the DynamoDB stores
 * (test/integration/store-contracts.test.ts), so the use-case tables built on them test what
 * production would do.
 */
import { describeInventoryStoreContract } from "../support/contracts/inventory-store.js";
import { describeLateFailureContract } from "../support/contracts/late-failure.js";
import { describeRackLockStoreContract } from "../support/contracts/rack-lock-store.js";
import { describeRunHistoryContract } from "../support/contracts/run-history.js";
import { describeRunScheduleContract } from "../support/contracts/run-schedule.js";
import { describeRunStoreContract } from "../support/contracts/run-store.js";
import { describeTaskStoreContract } from "../support/contracts/task-store.js";
import {
  MemoryInventoryStore,
  MemoryRackLockStore,
  MemoryRunStore,
  MemoryTaskStore,
} from "../support/memory-stores.js";

describeRunStoreContract("in memory", async () => ({ runs: new MemoryRunStore() }));
describeRunHistoryContract("in memory", async () => ({ runs: new MemoryRunStore() }));
describeRunScheduleContract("in memory", async () => ({ runs: new MemoryRunStore() }));
describeLateFailureContract("in memory", async () => ({ runs: new MemoryRunStore() }));
describeTaskStoreContract("in memory", async () => ({ tasks: new MemoryTaskStore() }));
describeInventoryStoreContract("in memory", async () => ({ inventory: new MemoryInventoryStore() }));
describeRackLockStoreContract("in memory", async () => ({ locks: new MemoryRackLockStore() }));
