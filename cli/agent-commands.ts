/**
 * The BMC agent's commands (docs/agent.md, docs/cli.md):
 *
 *   flowctl agent provision --rack RACK_ID --policy NAME --bmcs FILE --out DIR [--role-alias NAME]
 *                           [--reports-rule NAME]
 *
 * They talk to AWS IoT Core (agent-provision.ts), not to the Flow service. agent-provision.ts, and
 * with it the AWS SDK, is loaded when the command runs: no other command pays for loading the SDK.
 */
import type { Command } from "commander";
import type { Act } from "./command-args.js";
import { EXIT, ExitWith } from "./errors.js";
import { fields } from "./output.js";

interface ProvisionOptions {
  rack: string;
  policy: string;
  bmcs: string;
  out: string;
  roleAlias?: string;
  reportsRule?: string;
}

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
    .option(
      "--reports-rule <name>",
      "the stack's BmcReportsRuleName: the agent sends its reports through IoT Basic Ingest (no messaging charge)",
    )
    .action(
      act(async (ctx, o: ProvisionOptions) => {
        const { iotClient, ProvisionError, provisionAgent, rackIdOption, reportsRuleOption } = await import(
          "./agent-provision.js"
        );
        const rackId = rackIdOption(o.rack);
        const reportsRule = o.reportsRule === undefined ? undefined : reportsRuleOption(o.reportsRule);
        const iot = iotClient(ctx.io.env);
        try {
          const done = await provisionAgent(
            {
              rackId,
              outDir: o.out,
              policyName: o.policy,
              bmcsFile: o.bmcs,
              ...(o.roleAlias === undefined ? {} : { roleAlias: o.roleAlias }),
              ...(reportsRule === undefined ? {} : { reportsRule }),
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
