/**
 * `Promise.all(items.map(fn))` with at most `limit` calls of `fn` running at once: for lookups a
 * request can fan out into (a target spec naming hundreds of racks), so that one request does not
 * take every socket of the store's client from the requests beside it. Results in input order; the
 * first rejection rejects the whole (calls already started run to their end).
 *
 *   await mapConcurrently(["a", "b", "c"], 2, async (x) => x.toUpperCase()) → ["A", "B", "C"]
 */
export async function mapConcurrently<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
