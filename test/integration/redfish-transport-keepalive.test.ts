/**
 * The Redfish transport and a BMC that closes an idle kept-alive connection (its keep-alive
 * timeout, or a reset): a GET whose reused socket turns out closed is sent once more on a new
 * connection and answered; a POST on such a socket is never re-sent (it may have been received).
 */
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BmcTransport } from "../../src/adapters/redfish/transport.js";

let server: http.Server;
let base = "";
const sockets = new Set<Socket>();
let connections = 0;
let posts = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.method === "POST") posts += 1;
    req.resume();
    req.on("end", () => res.writeHead(200, { "Content-Type": "application/json" }).end('{"ok":true}'));
  });
  server.on("connection", (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** Resets the idle connections from the server's side while the client's agent still keeps them. */
function resetIdle(): void {
  for (const socket of sockets) socket.resetAndDestroy();
}

describe("Redfish transport: a kept-alive connection the BMC closed", () => {
  it("a GET on it is sent again on a new connection and answered", async () => {
    const transport = new BmcTransport(base, {}, 5_000);
    try {
      expect((await transport.send({ method: "GET", path: "/redfish/v1/" })).status).toBe(200);
      const before = connections;
      resetIdle();
      const again = await transport.send({ method: "GET", path: "/redfish/v1/UpdateService" });
      expect([again.status, again.body]).toEqual([200, { ok: true }]);
      expect(connections).toBeGreaterThan(before);
    } finally {
      transport.close();
    }
  });

  it("a POST on it fails as unreachable and is not sent again", async () => {
    const transport = new BmcTransport(base, {}, 5_000);
    try {
      await transport.send({ method: "GET", path: "/redfish/v1/" });
      const before = posts;
      resetIdle();
      const posted = transport.send({
        method: "POST",
        path: "/redfish/v1/Managers/BMC/Actions/Manager.Reset",
        json: {},
      });
      await expect(posted).rejects.toMatchObject({ code: "UNREACHABLE" });
      expect(posts).toBe(before);
    } finally {
      transport.close();
    }
  });
});
