/**
 * Where a path (`["rules", 2, "match", "to", 0]`) sits in a JSON text, so a 422's `loc` can be shown
 * at the line it names. A small scanner over valid JSON: it records the start and end offset of
 * every value by its path.
 */
export type Path = Array<string | number>;

export function locate(text: string, path: Path): { start: number; end: number } | null {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const str = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(start, i)) as string;
  };
  // Walks one value; when `rest` is empty this value is the target.
  const value = (rest: Path): { start: number; end: number } | null => {
    ws();
    const start = i;
    const want = rest[0];
    let found: { start: number; end: number } | null = null;
    if (text[i] === '{') {
      i++;
      ws();
      while (text[i] !== '}' && i < text.length) {
        ws();
        const keyStart = i;
        const key = str();
        ws();
        i++; // ':'
        if (rest.length > 0 && key === want) {
          const inner = value(rest.slice(1));
          // A member's own error covers `"key": value`; a deeper one what the rest of the path finds.
          found = rest.length === 1 && inner ? { start: keyStart, end: inner.end } : inner;
        } else value([]);
        ws();
        if (text[i] === ',') i++;
        ws();
      }
      i++;
    } else if (text[i] === '[') {
      i++;
      ws();
      let n = 0;
      while (text[i] !== ']' && i < text.length) {
        const inner = value(rest.length > 0 && want === n ? rest.slice(1) : []);
        if (rest.length > 0 && want === n) found = inner;
        n++;
        ws();
        if (text[i] === ',') i++;
        ws();
      }
      i++;
    } else if (text[i] === '"') str();
    else while (i < text.length && /[^,\]}\s]/.test(text[i])) i++;
    if (rest.length === 0) return { start, end: i };
    return found ?? (rest.length > 0 ? { start, end: Math.min(i, start + 1) } : null);
  };
  try {
    JSON.parse(text);
  } catch {
    return null;
  }
  return value(path);
}

/** 1-based line of an offset. */
export function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let k = 0; k < offset && k < text.length; k++) if (text[k] === '\n') line++;
  return line;
}
