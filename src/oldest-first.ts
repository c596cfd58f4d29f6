/**
 * Oldest-first eviction for a Map used as a bounded cache. Dropping `map.keys().next().value`
 * is slow once the map is full: V8 leaves a deleted entry's slot in its table until the table is
 * rebuilt, and a new iterator walks every such slot from the start, so each insert into a full
 * map paid for all the entries dropped before it since the last rebuild (37 µs an insert into a
 * full map of 50,000 against 0.7 µs with this class, bench/README.md "Twenty-seventh pass").
 *
 * One iterator kept from one eviction to the next walks each slot once. A Map's iterator is live:
 * it skips entries deleted after it was made, meets entries added after it, and follows the
 * table when it is rebuilt; an entry deleted and set again moves to the end, where the iterator
 * meets it in turn. Every key before the iterator's place has been deleted, so the key it gives is
 * always the oldest one in the map: the same entry the fresh iterator would have found.
 */
export class OldestFirst<K, V> {
  #entries: Iterator<[K, V]> | null = null;

  constructor(readonly map: Map<K, V>) {}

  /**
   * The value kept for `key`, or the one `make` gives, kept, the oldest entry dropped first when the
   * map already holds `max`. `undefined` is never kept: a `make` that gives it is asked again.
   */
  remember(key: K, max: number, make: () => V): V {
    let value = this.map.get(key);
    if (value === undefined) {
      if (this.map.size >= max) this.evict();
      value = make();
      this.map.set(key, value);
    }
    return value;
  }

  /** Deletes the map's oldest entry and returns it; undefined when the map is empty. */
  evict(): [K, V] | undefined {
    for (;;) {
      this.#entries ??= this.map.entries();
      const next = this.#entries.next();
      if (next.done !== true) {
        this.map.delete(next.value[0]);
        return next.value;
      }
      // An iterator that reached the end is finished for good, even if entries come after.
      this.#entries = null;
      if (this.map.size === 0) return undefined;
    }
  }
}
