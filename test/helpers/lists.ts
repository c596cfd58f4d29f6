/**
 * Screening lists for tests, in the real file shapes, served from loopback.
 *
 * - sdnAdvancedXml: OFAC's SDN Advanced XML (SDN_ADVANCED.XML): the export's namespace, DateOfIssue,
 *   the feature types under ReferenceValueSets/FeatureTypeValues with numeric ids the reader must
 *   not rely on, and DistinctParty/Profile/Identity/Alias/DocumentedName for the name and
 *   Feature/FeatureVersion/VersionDetail for each address.
 * - sdnLegacyXml: the legacy SDN.XML: publshInformation/Publish_Date (MM/DD/YYYY) and sdnEntry with
 *   uid, names and idList/id (idType, idNumber).
 * - the three blocklist feed formats.
 * - startListServer: a loopback server whose routes a test sets and changes (a body, or a handler
 *   for hostile answers), counting the requests each path received.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import snapshot from '../../src/screening/ofac-snapshot.json' with { type: 'json' };

export interface SdnEntry {
  uid: string;
  name: string;
  /** [asset, address] pairs, e.g. ['ETH', '0x…'] or ['XBT', 'bc1…']. */
  addresses: Array<[string, string]>;
}

const ASSETS = [
  'XBT',
  'ETH',
  'XMR',
  'LTC',
  'ZEC',
  'DASH',
  'BTG',
  'ETC',
  'BSV',
  'BCH',
  'XVG',
  'USDT',
  'XRP',
  'ARB',
  'BSC',
  'USDC',
  'TRX',
];
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** The embedded snapshot's addresses as SDN entries (one per address), so a served list does not shrink it. */
export function snapshotEntries(): SdnEntry[] {
  return snapshot.entries.map((e, i) => ({
    uid: String(30000 + i),
    name: `SNAPSHOT ENTRY ${i}`,
    addresses: e.assets.map((a): [string, string] => [a, e.address]),
  }));
}

export function sdnAdvancedXml(date: string, entries: SdnEntry[]): string {
  const [y, m, d] = date.split('-').map(Number);
  // Ids shuffled against the asset order: the reader must go by the text.
  const ids = new Map(ASSETS.map((a, i) => [a, String(344 + ((i * 7) % ASSETS.length) * 3)]));
  const types = ASSETS.map(
    (a) => `      <FeatureType ID="${ids.get(a)}" FeatureTypeGroupID="1">Digital Currency Address - ${a}</FeatureType>`,
  );
  const parties = entries.map((e) => {
    const features = e.addresses
      .map(
        ([asset, addr], j) => `          <Feature ID="${e.uid}${j}" FeatureTypeID="${ids.get(asset) ?? '9999'}">
            <FeatureVersion ID="${e.uid}${j}1" ReliabilityID="1">
              <Comment />
              <VersionDetail DetailTypeID="1432">${esc(addr)}</VersionDetail>
            </FeatureVersion>
            <IdentityReference IdentityID="${e.uid}" IdentityFeatureLinkTypeID="1" />
          </Feature>`,
      )
      .join('\n');
    return `    <DistinctParty FixedRef="${e.uid}">
      <Comment />
      <Profile ID="${e.uid}" PartySubTypeID="3">
        <Identity ID="${e.uid}" FixedRef="${e.uid}" Primary="true" False="false">
          <Alias FixedRef="${e.uid}" AliasTypeID="1400" Primary="false" LowQuality="false">
            <DocumentedName ID="${e.uid}2" FixedRef="${e.uid}" DocNameStatusID="1">
              <DocumentedNamePart><NamePartValue NamePartGroupID="1" ScriptID="215" ScriptStatusID="1" Acronym="false">${esc(e.name)} ALIAS</NamePartValue></DocumentedNamePart>
            </DocumentedName>
          </Alias>
          <Alias FixedRef="${e.uid}" AliasTypeID="1403" Primary="true" LowQuality="false">
            <DocumentedName ID="${e.uid}1" FixedRef="${e.uid}" DocNameStatusID="1">
              <DocumentedNamePart><NamePartValue NamePartGroupID="1" ScriptID="215" ScriptStatusID="1" Acronym="false">${esc(e.name)}</NamePartValue></DocumentedNamePart>
            </DocumentedName>
          </Alias>
        </Identity>
${features}
      </Profile>
    </DistinctParty>`;
  });
  return `<?xml version="1.0" encoding="utf-8"?>
<Sanctions xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="https://sanctionslistservice.ofac.treas.gov/api/PublicationPreview/exports/ADVANCED_XML">
  <DateOfIssue>
    <Year>${y}</Year>
    <Month>${m}</Month>
    <Day>${d}</Day>
  </DateOfIssue>
  <ReferenceValueSets>
    <AliasTypeValues>
      <AliasType ID="1400">A.K.A.</AliasType>
      <AliasType ID="1403">Name</AliasType>
    </AliasTypeValues>
    <FeatureTypeValues>
      <FeatureType ID="8" FeatureTypeGroupID="0">Birthdate</FeatureType>
${types.join('\n')}
    </FeatureTypeValues>
  </ReferenceValueSets>
  <DistinctParties>
${parties.join('\n')}
  </DistinctParties>
</Sanctions>
`;
}

export function sdnLegacyXml(date: string, entries: SdnEntry[]): string {
  const [y, m, d] = date.split('-');
  const body = entries
    .map(
      (e) => `  <sdnEntry>
    <uid>${e.uid}</uid>
    <lastName>${esc(e.name)}</lastName>
    <sdnType>Entity</sdnType>
    <programList><program>CYBER2</program></programList>
    <idList>
${e.addresses.map(([asset, addr], j) => `      <id><uid>${e.uid}${j}</uid><idType>Digital Currency Address - ${asset}</idType><idNumber>${esc(addr)}</idNumber></id>`).join('\n')}
    </idList>
  </sdnEntry>`,
    )
    .join('\n');
  return `<?xml version="1.0" standalone="yes"?>
<sdnList xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://tempuri.org/sdnList.xsd">
  <publshInformation>
    <Publish_Date>${m}/${d}/${y}</Publish_Date>
    <Record_Count>${entries.length}</Record_Count>
  </publshInformation>
${body}
</sdnList>
`;
}

export const feedJson = (addresses: string[]) => JSON.stringify(addresses);
export const feedObjects = (items: Array<{ address: string; reason: string }>) => JSON.stringify(items);
export const feedText = (addresses: string[]) =>
  `# operator feed\n${addresses.map((a) => `${a}  # listed`).join('\n')}\n`;

export type Route = string | ((req: http.IncomingMessage, res: http.ServerResponse) => void);

export interface ListServer {
  url: string;
  set(path: string, route: Route): void;
  hits(path: string): number;
  close(): Promise<void>;
}

export async function startListServer(): Promise<ListServer> {
  const routes = new Map<string, Route>();
  const counts = new Map<string, number>();
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const path = req.url ?? '/';
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const r = routes.get(path);
    if (r === undefined) {
      res.writeHead(404).end();
      return;
    }
    if (typeof r === 'string') {
      res.writeHead(200, { 'content-type': path.endsWith('.xml') ? 'application/xml' : 'text/plain' }).end(r);
      return;
    }
    open.add(res);
    res.on('close', () => open.delete(res));
    r(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    set: (path, route) => routes.set(path, route),
    hits: (path) => counts.get(path) ?? 0,
    close: async () => {
      for (const r of open) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Polls `check` every 100 ms until it holds or `ms` pass; returns whether it held. */
export async function until(check: () => boolean | Promise<boolean>, ms = 20_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return await check();
}
