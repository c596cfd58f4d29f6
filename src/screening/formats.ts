/**
 * The list formats screening reads (docs/screening.md §2), each as a streaming parser: chunks in,
 * a parsed list out. Pure (no I/O); the list worker feeds it from the network.
 *
 * - OFAC's SDN Advanced XML (`SDN_ADVANCED.XML`): the feature types are found by their text
 *   (`Digital Currency Address - <asset>`), never by a numeric id; every `VersionDetail` of a
 *   `Feature` of such a type is an address; the entry is the `DistinctParty` (its `FixedRef` is the
 *   uid, the primary alias its name); the publish date is `DateOfIssue`.
 * - OFAC's legacy `SDN.XML`: `sdnEntry` (uid, names) with `idList/id` pairs `idType` /
 *   `idNumber`; the publish date is `publshInformation/Publish_Date` (MM/DD/YYYY).
 * - Blocklist feeds: a JSON array of addresses, a JSON array of `{address, reason}`, or text with
 *   one address per line (`#` starts a comment).
 *
 * XML is read by saxes, which expands no entity beyond XML's five and resolves nothing external; a
 * document type declaration is refused outright, as is nesting deeper than MAX_XML_DEPTH and text
 * longer than MAX_TEXT. Only 0x addresses of 40 hex digits count; a feature or line that looks like
 * one and is not is skipped and counted as malformed. Addresses of other chains (Bitcoin, Tron...)
 * are neither.
 */
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import type { ListKind, ListTag } from './list.js';
import { normalAddress } from './list.js';

export const FEATURE_PREFIX = 'Digital Currency Address - ';
/** Deeper than any real SDN file (about 12 levels): a nesting attack stops here. */
export const MAX_XML_DEPTH = 64;
/** The longest text node kept (names, addresses); a longer one is an attack or garbage. */
export const MAX_TEXT = 4096;

export interface ParsedList {
  entries: Array<[string, ListTag]>;
  /** Entries that looked like an EVM address and were not one. */
  malformed: number;
  /** The publish date the file states (YYYY-MM-DD), or null. */
  date: string | null;
  /** Which reader parsed it: `sdn_advanced_xml`, `sdn_xml`, `json`, `json_objects`, `text`. */
  format: string;
}

export interface ListParser {
  write(chunk: string): void;
  end(): ParsedList;
}

/** The tag of a feed entry without a reason, shared (a million entries, one object). */
const NO_REASON: ListTag = Object.freeze({ reason: null });

export class ListFormatError extends Error {
  override name = 'ListFormatError';
}

const local = (name: string): string => name.slice(name.indexOf(':') + 1);
const looksEvm = (s: string): boolean => /^0x/i.test(s.trim());
const pad = (n: string): string => n.padStart(2, '0');

/** Both SDN formats: one streaming XML reader, the root element decides which one it is. */
function sdnParser(): ListParser {
  const parser = new SaxesParser({ xmlns: false, position: false });
  const stack: string[] = [];
  let text = '';
  let root: 'advanced' | 'legacy' | null = null;
  let date: string | null = null;
  const dateParts: Record<string, string> = {};
  let malformed = 0;
  const entries: Array<[string, ListTag]> = [];
  // Advanced: feature type id → asset; features seen (resolved at the end, whatever the order).
  const featureTypes = new Map<string, string>();
  const features: Array<{ typeId: string; value: string; uid: string | null; name: string | null }> = [];
  let party: { uid: string | null; names: string[]; primary: boolean; features: typeof features } | null = null;
  let featureTypeId: string | null = null;
  let featureTypeTextId: string | null = null;
  let inPrimaryAlias = false;
  // Legacy: the current entry and id.
  let entry: { uid: string | null; first: string | null; last: string | null; ids: Array<[string, string]> } | null =
    null;
  let id: { type: string | null; number: string | null } | null = null;

  const add = (asset: string, value: string, uid: string | null, name: string | null) => {
    const a = normalAddress(value);
    if (a !== null) entries.push([a, { uid, name, assets: [asset] }]);
    else if (looksEvm(value)) malformed++;
  };

  parser.on('doctype', () => {
    throw new ListFormatError('a document type declaration is not accepted');
  });
  parser.on('error', (err) => {
    throw new ListFormatError(`not well-formed XML: ${err.message}`);
  });
  parser.on('opentag', (tag: SaxesTagPlain) => {
    const name = local(tag.name);
    if (stack.length === 0) {
      if (name === 'Sanctions') root = 'advanced';
      else if (name === 'sdnList') root = 'legacy';
      else throw new ListFormatError(`root element <${name}> is neither an SDN Advanced nor a legacy SDN list`);
    }
    stack.push(name);
    if (stack.length > MAX_XML_DEPTH) throw new ListFormatError(`nesting deeper than ${MAX_XML_DEPTH} elements`);
    text = '';
    const attr = (k: string): string | null => {
      const v = tag.attributes[k];
      return typeof v === 'string' ? v : null;
    };
    if (root === 'advanced') {
      if (name === 'FeatureType' && stack.includes('FeatureTypeValues')) featureTypeTextId = attr('ID');
      else if (name === 'DistinctParty') party = { uid: attr('FixedRef'), names: [], primary: false, features: [] };
      else if (name === 'Alias' && party && !party.primary && attr('Primary') === 'true') inPrimaryAlias = true;
      else if (name === 'Feature' && party) featureTypeId = attr('FeatureTypeID');
    } else if (root === 'legacy') {
      if (name === 'sdnEntry') entry = { uid: null, first: null, last: null, ids: [] };
      else if (name === 'id' && entry) id = { type: null, number: null };
    }
  });
  parser.on('text', (t: string) => {
    if (text.length + t.length > MAX_TEXT) throw new ListFormatError(`a text node longer than ${MAX_TEXT} characters`);
    text += t;
  });
  parser.on('closetag', (tag: SaxesTagPlain) => {
    const name = local(tag.name);
    const parent = stack[stack.length - 2];
    const value = text.trim();
    if (root === 'advanced') {
      if (parent === 'DateOfIssue' && (name === 'Year' || name === 'Month' || name === 'Day')) dateParts[name] = value;
      else if (name === 'DateOfIssue' && dateParts.Year && dateParts.Month && dateParts.Day)
        date = `${dateParts.Year}-${pad(dateParts.Month)}-${pad(dateParts.Day)}`;
      else if (name === 'FeatureType' && featureTypeTextId !== null) {
        if (value.startsWith(FEATURE_PREFIX)) featureTypes.set(featureTypeTextId, value.slice(FEATURE_PREFIX.length));
        featureTypeTextId = null;
      } else if (name === 'NamePartValue' && inPrimaryAlias && party) party.names.push(value);
      else if (name === 'Alias' && inPrimaryAlias && party) {
        inPrimaryAlias = false;
        party.primary = true;
      } else if (name === 'VersionDetail' && party && featureTypeId !== null && stack.includes('Feature'))
        party.features.push({ typeId: featureTypeId, value, uid: party.uid, name: null });
      else if (name === 'Feature') featureTypeId = null;
      else if (name === 'DistinctParty' && party) {
        const partyName = party.names.length > 0 ? party.names.join(' ') : null;
        for (const f of party.features) features.push({ ...f, name: partyName });
        party = null;
      }
    } else if (root === 'legacy') {
      if (parent === 'publshInformation' && name === 'Publish_Date') {
        const m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(value);
        if (m) date = `${m[3]}-${pad(m[1])}-${pad(m[2])}`;
      } else if (entry && parent === 'sdnEntry') {
        if (name === 'uid') entry.uid = value;
        else if (name === 'firstName') entry.first = value;
        else if (name === 'lastName') entry.last = value;
      } else if (id && parent === 'id') {
        if (name === 'idType') id.type = value;
        else if (name === 'idNumber') id.number = value;
      }
      if (name === 'id' && entry && id) {
        if (id.type?.startsWith(FEATURE_PREFIX) && id.number !== null)
          entry.ids.push([id.type.slice(FEATURE_PREFIX.length), id.number]);
        id = null;
      } else if (name === 'sdnEntry' && entry) {
        const n = [entry.first, entry.last].filter((x): x is string => !!x).join(' ') || null;
        for (const [asset, number] of entry.ids) add(asset, number, entry.uid, n);
        entry = null;
      }
    }
    stack.pop();
    text = '';
  });

  return {
    write(chunk) {
      parser.write(chunk);
    },
    end() {
      parser.close();
      if (root === null) throw new ListFormatError('no XML root element');
      for (const f of features) {
        const asset = featureTypes.get(f.typeId);
        if (asset !== undefined) add(asset, f.value, f.uid, f.name);
      }
      return { entries, malformed, date, format: root === 'advanced' ? 'sdn_advanced_xml' : 'sdn_xml' };
    },
  };
}

/** A blocklist feed: the whole body (bounded by the download cap), then one of three shapes. */
function feedParser(): ListParser {
  const parts: string[] = [];
  return {
    write(chunk) {
      parts.push(chunk);
    },
    end() {
      const body = parts.join('');
      const entries: Array<[string, ListTag]> = [];
      let malformed = 0;
      if (body.trimStart().startsWith('[')) {
        let items: unknown;
        try {
          items = JSON.parse(body);
        } catch (err) {
          throw new ListFormatError(`a JSON feed that does not parse: ${(err as Error).message}`);
        }
        if (!Array.isArray(items)) throw new ListFormatError('a JSON feed must be an array');
        let objects = false;
        for (const item of items) {
          const obj = typeof item === 'object' && item !== null && !Array.isArray(item);
          if (obj) objects = true;
          const raw = obj ? (item as Record<string, unknown>).address : item;
          const reason = obj ? (item as Record<string, unknown>).reason : null;
          const a = normalAddress(raw);
          if (a === null) malformed++;
          else
            entries.push([
              a,
              typeof reason === 'string' && reason !== '' ? { reason: reason.slice(0, 200) } : NO_REASON,
            ]);
        }
        return { entries, malformed, date: null, format: objects ? 'json_objects' : 'json' };
      }
      for (const rawLine of body.split(/\r?\n/)) {
        const hash = rawLine.indexOf('#');
        const line = (hash < 0 ? rawLine : rawLine.slice(0, hash)).trim();
        if (line === '') continue;
        const a = normalAddress(line);
        if (a === null) malformed++;
        else entries.push([a, NO_REASON]);
      }
      return { entries, malformed, date: null, format: 'text' };
    },
  };
}

export function listParser(kind: ListKind): ListParser {
  return kind === 'sanctions' ? sdnParser() : feedParser();
}

/** Parses a whole body at once (tests, the embedded snapshot's checks). */
export function parseList(kind: ListKind, body: string): ParsedList {
  const p = listParser(kind);
  p.write(body);
  return p.end();
}
