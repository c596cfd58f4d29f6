/**
 * Values kept by two strings (an account and a name within it), found with the caller's own
 * strings. A key text joined from the two per lookup is a concatenation, which a Map must flatten,
 * hash and compare through V8's runtime: about 165 ns a lookup for an account id, against 17 ns
 * for the two maps here (bench/README.md, "Twentieth pass"). At most `max` values are kept; the
 * one past that starts the map afresh.
 */
export class PairMap<V> {
  private readonly byFirst = new Map<string, Map<string, V>>();
  private count = 0;

  constructor(private readonly max = 10_000) {}

  get(first: string, second: string): V | undefined {
    return this.byFirst.get(first)?.get(second);
  }

  set(first: string, second: string, value: V): void {
    if (this.count >= this.max) {
      this.byFirst.clear();
      this.count = 0;
    }
    let bySecond = this.byFirst.get(first);
    if (bySecond === undefined) {
      bySecond = new Map();
      this.byFirst.set(first, bySecond);
    }
    if (!bySecond.has(second)) this.count++;
    bySecond.set(second, value);
  }

  delete(first: string, second: string): void {
    const bySecond = this.byFirst.get(first);
    if (bySecond?.delete(second)) this.count--;
    if (bySecond?.size === 0) this.byFirst.delete(first);
  }
}
