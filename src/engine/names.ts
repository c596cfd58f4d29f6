/**
 * Evidence names (semantics.md §1): the check type, qualified where a request has several of
 * one type — by the asset or pair when that tells them apart, else by position (`http[2]`).
 */
const QUALIFIER: Record<string, string> = {
  price: 'asset_id',
  stablecoin_depeg: 'asset_id',
  dex_price: 'pair_address',
  rug_pull_risk: 'pair_address',
  contract_verified: 'contract_address',
};

export function checkNames(checks: ReadonlyArray<{ type: string; [k: string]: unknown }>): string[] {
  const byType = new Map<string, number>();
  for (const c of checks) byType.set(c.type, (byType.get(c.type) ?? 0) + 1);
  const names = checks.map((c, i) => {
    if (byType.get(c.type) === 1) return c.type;
    const field = QUALIFIER[c.type];
    const q = field && typeof c[field] === 'string' ? (c[field] as string) : String(i);
    return `${c.type}[${q}]`;
  });
  // Two checks on the same asset still need distinct names.
  return names.map((n, i) => (names.indexOf(n) === names.lastIndexOf(n) ? n : `${checks[i].type}[${i}]`));
}
