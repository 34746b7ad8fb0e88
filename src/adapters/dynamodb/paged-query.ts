/**
 * One page of a Query, read from the store page by page instead of every item and a slice.
 *
 *   page({ offset: 2000, limit: 100 }) →
 *     1. start from the cursor kept for this listing at the highest position ≤ 2000 (the previous
 *        page's end when a client pages forward: no skip at all), else from the start;
 *     2. skip to the offset with `Select: COUNT` queries (keys evaluated, nothing transferred or
 *        held; each at most 1 MB of items read);
 *     3. read the page with `Limit` (the items asked for, no more: a filter may need a few more
 *        requests), and keep the cursor after it for the next page.
 *
 * So memory is one page, and paging forward costs one or two requests a page whatever the
 * offset; a cold jump to offset N costs N keys of COUNT reads (N · item size / 1 MB requests).
 * The total comes from `count` (the caller may know it without reading: a run's phase sizes).
 *
 * A cursor is a position in the listing as it was when the previous page was read: a page
 * continues where that page ended, even if items before it changed (a target that left a status
 * filter). Cursors are kept per process for the most recent CURSORS listings' positions.
 */
import { type DynamoDBDocumentClient, QueryCommand, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import type { Page } from "../../domain/list-queries.js";

type Key = Record<string, unknown>;
export type PagedQueryInput = Omit<QueryCommandInput, "ExclusiveStartKey" | "Limit" | "Select">;

/** How many (listing, position) cursors a store keeps. */
const CURSORS = 4096;

export class PagedQuery {
  /** `<listing>\u0000<position>` → the key to start after (insertion order = age). */
  private readonly cursors = new Map<string, Key>();
  /** The positions kept per listing. */
  private readonly positions = new Map<string, Set<number>>();

  constructor(private readonly doc: DynamoDBDocumentClient) {}

  /** The page's items in the Query's order. `listing` names the query (every parameter of it). */
  async page(input: PagedQueryInput, listing: string, page: Page): Promise<Key[]> {
    if (page.limit === 0) return [];
    let { position, startKey } = this.nearest(listing, page.offset);
    while (position < page.offset) {
      const out = await this.doc.send(
        new QueryCommand({
          ...input,
          Select: "COUNT",
          Limit: page.offset - position,
          ExclusiveStartKey: startKey,
        }),
      );
      position += out.Count ?? 0;
      startKey = out.LastEvaluatedKey;
      if (startKey === undefined) return [];
    }
    const items: Key[] = [];
    do {
      const out = await this.doc.send(
        new QueryCommand({ ...input, Limit: page.limit - items.length, ExclusiveStartKey: startKey }),
      );
      items.push(...(out.Items ?? []));
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined && items.length < page.limit);
    if (startKey !== undefined) this.keep(listing, page.offset + items.length, startKey);
    return items;
  }

  /** How many items the Query matches: COUNT queries, nothing transferred. */
  async count(input: PagedQueryInput): Promise<number> {
    let total = 0;
    let startKey: Key | undefined;
    do {
      const out = await this.doc.send(
        new QueryCommand({ ...input, Select: "COUNT", ExclusiveStartKey: startKey }),
      );
      total += out.Count ?? 0;
      startKey = out.LastEvaluatedKey;
    } while (startKey !== undefined);
    return total;
  }

  private nearest(listing: string, offset: number): { position: number; startKey: Key | undefined } {
    let best = 0;
    for (const p of this.positions.get(listing) ?? []) if (p <= offset && p > best) best = p;
    return { position: best, startKey: best === 0 ? undefined : this.cursors.get(`${listing}\u0000${best}`) };
  }

  private keep(listing: string, position: number, key: Key): void {
    const id = `${listing}\u0000${position}`;
    this.cursors.delete(id);
    this.cursors.set(id, key);
    const kept = this.positions.get(listing) ?? new Set<number>();
    this.positions.set(listing, kept);
    kept.add(position);
    if (this.cursors.size > CURSORS) {
      const oldest = this.cursors.keys().next().value as string;
      this.cursors.delete(oldest);
      const [name, at] = oldest.split("\u0000") as [string, string];
      const set = this.positions.get(name);
      set?.delete(Number(at));
      if (set?.size === 0) this.positions.delete(name);
    }
  }
}
