/**
 * The Redfish emulator's state of one BMC and of one update task, and its HTTP answer helpers:
 * shared by the emulator (local/redfish-emulator.ts: sessions, the tree, updates) and its
 * activation (local/redfish-emulator-resets.ts: staged versions and reset actions).
 */
import type http from "node:http";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import type { EmulatedBmcSpec, RedfishBehaviour, RedfishRecord } from "./redfish-emulator-api.js";
import type * as tree from "./redfish-tree.js";

export interface Task {
  id: string;
  doc: tree.TaskDoc;
  step: number;
  targets: string[];
  version?: string;
  applyTime: string;
  /** The monitor answered its final 200 once; it answers 404 after. */
  reported: boolean;
  timer?: NodeJS.Timeout;
  startedAt: number;
}

export interface Bmc {
  spec: EmulatedBmcSpec;
  behaviour: RedfishBehaviour;
  members: Map<string, tree.MemberState>;
  sessions: Map<string, string>;
  tasks: Map<string, Task>;
  running?: Task;
  busyLeft: number;
  down: boolean;
  sockets: Set<Socket>;
  server: http.Server;
  url: string;
  record: RedfishRecord;
  flashTimes: number[];
  uuid: string;
  pushApplyTime: string;
  /** Member Id → a version flashed but not active, and the reset it waits for (`any`: OnReset). */
  staged: Map<string, { version: string; needs: "bmc" | "host" | "ac" | "any" }>;
}

export function send(res: http.ServerResponse, status: number, body: object): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(text),
    "OData-Version": "4.0",
  });
  res.end(text);
}

export async function readAll(req: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
