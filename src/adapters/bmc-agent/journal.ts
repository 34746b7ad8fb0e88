/**
 * The agent's update journal on disk (the UpdateJournal port): one JSON line per record in
 * `<stateDir>/journal.jsonl`, appended and flushed (fdatasync) before `record` resolves, read
 * back whole at start; the last line for a (component, request id) wins. A torn last line (a
 * crash mid-write) is skipped. It holds request ids, versions and task monitor paths: no
 * credentials, no image URLs.
 */
import { mkdir, open, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { JournalEntry, UpdateJournal } from "../../app/ports/bmc-agent.js";

type FileHandle = Awaited<ReturnType<typeof open>>;

export class FileJournal implements UpdateJournal {
  private readonly entries = new Map<string, JournalEntry>();
  private writes: Promise<void> = Promise.resolve();

  private constructor(private readonly file: FileHandle) {}

  static async open(stateDir: string): Promise<FileJournal> {
    await mkdir(stateDir, { recursive: true });
    const path = join(stateDir, "journal.jsonl");
    const text = await readFile(path, "utf8").catch(() => "");
    const journal = new FileJournal(await open(path, "a"));
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      try {
        const entry = JSON.parse(line) as JournalEntry;
        journal.entries.set(key(entry.componentId, entry.requestId), entry);
      } catch {
        // A line cut short by a crash: the record it was writing never completed.
      }
    }
    return journal;
  }

  get(componentId: string, requestId: string): JournalEntry | undefined {
    return this.entries.get(key(componentId, requestId));
  }

  record(entry: JournalEntry): Promise<void> {
    this.entries.set(key(entry.componentId, entry.requestId), entry);
    const line = `${JSON.stringify(entry)}\n`;
    this.writes = this.writes
      .catch(() => {})
      .then(async () => {
        await this.file.appendFile(line);
        await this.file.datasync();
      });
    return this.writes;
  }

  async close(): Promise<void> {
    await this.writes.catch(() => {});
    await this.file.close();
  }
}

const key = (componentId: string, requestId: string) => `${componentId.toLowerCase()} ${requestId}`;
