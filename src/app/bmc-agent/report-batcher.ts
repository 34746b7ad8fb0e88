/**
 * The agent's reports, one message per rack per moment: every event its BMC workers produce
 * within `flushMs` of the first one not yet sent goes out together, as one rack batch
 * (src/domain/bmc-rack-reports.ts) on the rack's own topic, split only where a batch would pass
 * IoT Core's message size limit. A rack's 39 acknowledgements, or the progress of 39 flashes read
 * in the same second, are one message instead of 39: one IoT message, one rule action, one SQS
 * message, one slice of one receiver batch.
 *
 * The window is fixed from its first event (not extended by later ones), so no event waits longer
 * than `flushMs` to leave, a result included: the child task's receiver gathers reports for about a
 * second anyway, and a wave waits for its last result, so sending a result at once would buy
 * nothing but messages.
 *
 * `publish` resolves as soon as the event is held for the rack's next message: a worker goes on at
 * once (its flash is not delayed by the window), and a message that fails to go is logged here with
 * what it carried, as a worker logs a failed publish of its own. Messages go out one after another,
 * each once the one before it is acknowledged (QoS 1), in the order their events came: a
 * component's events keep their order within a message and across messages. `flush()` sends what
 * is held now and resolves once every message so far is settled (the agent's stop).
 */
import type { BmcEvent } from "../../domain/bmc-protocol.js";
import { encodeRackReports, MAX_RACK_REPORTS_BYTES, type RackReport } from "../../domain/bmc-rack-reports.js";
import type { AgentClock, EventSink } from "../ports/bmc-agent.js";

export interface ReportBatcherDeps {
  clock: AgentClock;
  /** How long the first held event waits for others to go with it. */
  flushMs: number;
  /** Publishes one message on the rack's reports topic (QoS 1); resolves once the broker has it. */
  send(payload: string): Promise<void>;
  /** The largest message (UTF-8 bytes); default IoT Core's limit. */
  maxBytes?: number;
  log: (line: string) => void;
}

export class ReportBatcher implements EventSink {
  private held: RackReport[] = [];
  /** Which window the pending timer is for: a timer of a window already flushed does nothing. */
  private window = 0;
  private timerFor: number | undefined;
  /** The messages in flight, one after another. */
  private sending: Promise<void> = Promise.resolve();
  private sent = { messages: 0, events: 0 };

  constructor(private readonly deps: ReportBatcherDeps) {}

  async publish(componentId: string, event: BmcEvent): Promise<void> {
    this.held.push({ componentId, event });
    if (this.timerFor !== undefined) return;
    const window = this.window;
    this.timerFor = window;
    // The clock's sleep takes no abort signal: a stopping agent flushes instead (flush()).
    void this.deps.clock.sleep(this.deps.flushMs).then(
      () => this.flushWindow(window),
      () => this.flushWindow(window),
    );
  }

  /** Sends every held event now; resolves once every message so far is settled. */
  flush(): Promise<void> {
    const batch = this.held;
    this.held = [];
    this.window += 1;
    this.timerFor = undefined;
    if (batch.length > 0) {
      const messages = encodeRackReports(batch, this.deps.maxBytes ?? MAX_RACK_REPORTS_BYTES);
      this.sending = this.sending.then(() => this.sendAll(batch, messages));
    }
    return this.sending;
  }

  /**
   * Messages and events sent so far (each message counted once its publish was acknowledged), and
   * the events held for the next message.
   */
  stats(): { messages: number; events: number; held: number } {
    return { ...this.sent, held: this.held.length };
  }

  private flushWindow(window: number): void {
    if (window === this.window) void this.flush();
  }

  private async sendAll(batch: RackReport[], messages: { payload: string; count: number }[]): Promise<void> {
    let at = 0;
    for (const { payload, count } of messages) {
      const carried = batch.slice(at, at + count);
      at += count;
      try {
        await this.deps.send(payload);
        this.sent.messages += 1;
        this.sent.events += carried.length;
      } catch (error) {
        const what = carried.map((r) => `${r.componentId} ${r.event.type}`).join(", ");
        this.deps.log(
          `bmc-agent: publishing the rack's reports (${what}) failed: ${(error as Error).message}`,
        );
      }
    }
  }
}
