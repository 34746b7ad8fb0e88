/**
 * The BMC agent's commands (docs/agent.md, docs/cli.md):
 *
 *   flowctl agent provision --rack RACK_ID --policy NAME --bmcs FILE --out DIR
 *
 * They talk to AWS IoT Core (agent-provision.ts), not to the Flow service.
 */
import type { Command } from "commander";
import { iotClient, ProvisionError, provisionAgent, rackIdOption } from "./agent-provision.js";
import type { Act } from "./command-args.js";
import { EXIT, ExitWith } from "./errors.js";
import { fields } from "./output.js";

export function registerAgentCommands(program: Command, act: Act): void {
  const agent = program
    .command("agent")
    .description("the BMC agent (flow-bmc-agent) on a rack's management host");

  agent
    .command("provision")
    .description(
      "register a rack's agent with AWS IoT Core (thing, certificate and keys, the agent policy) and write its config",
    )
    .requiredOption("--rack <rackId>", "the inventory rack's id (UUID): the thing's name, the agent's topics")
    .requiredOption("--policy <name>", "the agent IoT policy (the stack's output BmcAgentPolicyName)")
    .requiredOption(
      "--bmcs <file>",
      "JSON array of the agent's bmcs[] entries (componentId, url, username, …)",
    )
    .requiredOption("--out <dir>", "where agent.json, agent.crt and agent.key are written (new or empty)")
    .option(
      "--role-alias <name>",
      "the stack's BmcAgentRoleAlias: the agent opens update commands' credentials",
    )
    .action(
      act(async (ctx, o: { rack: string; policy: string; bmcs: string; out: string; roleAlias?: string }) => {
        const rackId = rackIdOption(o.rack);
        const iot = iotClient(ctx.io.env);
        try {
          const done = await provisionAgent(
            {
              rackId,
              outDir: o.out,
              policyName: o.policy,
              bmcsFile: o.bmcs,
              ...(o.roleAlias === undefined ? {} : { roleAlias: o.roleAlias }),
              env: ctx.io.env,
            },
            iot,
          );
          ctx.print({
            data: done,
            table: () =>
              fields([
                ["Thing", `${done.thingName}${done.thingExisted ? " (existed; kept)" : " (created)"}`],
                ["Certificate", `${done.certificateId} (active)`],
                ["Policy", `${done.policyName} (attached to the certificate)`],
                ["Endpoint", `mqtts://${done.endpoint}:8883`],
                ["Config", done.files.config],
                ["Certificate file", done.files.cert],
                ["Key file", `${done.files.key} (mode 0600: copy it to the rack host only)`],
              ]),
          });
          return EXIT.OK;
        } catch (error) {
          if (!(error instanceof ProvisionError)) throw error;
          ctx.io.stderr.write(`error: agent provision: ${error.message}\n`);
          throw new ExitWith(EXIT.AWS_FAILED);
        } finally {
          iot.destroy();
        }
      }),
    );
}
