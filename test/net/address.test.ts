import t from 'tap';
import { classifyAddress, isForbiddenAddress, type AddressClass } from '../../src/net/address.js';
import { canonicalIp } from '../../src/net/ip.js';

const TABLE: [string, AddressClass][] = [
  // IPv4 ranges
  ['8.8.8.8', 'public'],
  ['1.1.1.1', 'public'],
  ['100.63.255.255', 'public'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['100.128.0.0', 'public'],
  ['0.0.0.0', 'unspecified'],
  ['0.255.255.255', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['10.255.255.255', 'private'],
  ['172.15.255.255', 'public'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['172.32.0.0', 'public'],
  ['192.168.1.1', 'private'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['169.254.169.254', 'link_local'],
  ['192.0.0.8', 'reserved'],
  ['192.0.2.1', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['198.18.0.1', 'benchmark'],
  ['198.19.255.255', 'benchmark'],
  ['198.20.0.0', 'public'],
  ['192.88.99.1', 'reserved'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
  // odd IPv4 spellings (what WHATWG URL and inet_aton accept)
  ['2130706433', 'loopback'],
  ['0x7f000001', 'loopback'],
  ['0177.0.0.1', 'loopback'],
  ['0x7f.1', 'loopback'],
  ['127.1', 'loopback'],
  ['127.0.1', 'loopback'],
  ['127.0.0.1.', 'loopback'],
  ['0xa9.0xfe.0xa9.0xfe', 'link_local'],
  ['2852039166', 'link_local'],
  ['012.0.0.1', 'private'],
  ['0', 'unspecified'],
  ['4294967295', 'broadcast'],
  // IPv6
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['[::1]', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback'],
  ['::ffff:127.0.0.1', 'loopback'],
  ['[::ffff:127.0.0.1]', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:169.254.169.254', 'link_local'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:8.8.8.8', 'public'],
  ['::ffff:0:127.0.0.1', 'loopback'],
  ['::127.0.0.1', 'reserved'],
  ['64:ff9b::127.0.0.1', 'loopback'],
  ['64:ff9b::8.8.8.8', 'public'],
  ['64:ff9b:1::1', 'private'],
  ['2002:7f00:1::', 'loopback'],
  ['2002:a9fe:a9fe::1', 'link_local'],
  ['2002:808:808::1', 'public'],
  ['2001::1', 'reserved'],
  ['2001:db8::1', 'documentation'],
  ['2001:2::1', 'benchmark'],
  ['3fff::1', 'documentation'],
  ['fc00::1', 'unique_local'],
  ['fd00::1', 'unique_local'],
  ['fd12:3456:789a::1', 'unique_local'],
  ['fe80::1', 'link_local'],
  ['fe80::1%eth0', 'link_local'],
  ['febf::1', 'link_local'],
  ['fec0::1', 'reserved'],
  ['ff02::1', 'multicast'],
  ['ff0e::fb', 'multicast'],
  ['100::1', 'reserved'],
  ['5f00::1', 'reserved'],
  ['2606:4700:4700::1111', 'public'],
  ['2a00:1450:4001:80b::200e', 'public'],
  // not addresses
  ['localhost', 'invalid'],
  ['example.com', 'invalid'],
  ['', 'invalid'],
  ['256.0.0.1', 'invalid'],
  ['1.2.3.4.5', 'invalid'],
  ['08.0.0.1', 'invalid'],
  ['4294967296', 'invalid'],
  [':::1', 'invalid'],
  ['1::2::3', 'invalid'],
];

t.test('classifyAddress covers every range, v4 and v6, in every spelling', async (t) => {
  for (const [ip, want] of TABLE) t.equal(classifyAddress(ip), want, `${ip} → ${want}`);
});

t.test('only public unicast is allowed', async (t) => {
  for (const [ip, cls] of TABLE) t.equal(isForbiddenAddress(ip), cls !== 'public', ip);
});

t.test('odd spellings normalise to the address that would be connected to', async (t) => {
  for (const s of ['2130706433', '0x7f000001', '0177.0.0.1', '0x7f.1', '127.1', '127.0.0.1.']) {
    t.same(canonicalIp(s), { family: 4, ip: '127.0.0.1' }, s);
  }
  t.same(canonicalIp('[::ffff:127.0.0.1]'), { family: 6, ip: '0:0:0:0:0:ffff:7f00:1' });
  t.equal(canonicalIp('example.com'), null);
});

t.test('WHATWG URL and the classifier agree on the host of odd URLs', async (t) => {
  for (const u of [
    'http://2130706433/',
    'http://0x7f.1/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://good@127.0.0.1/',
    'http://[::ffff:127.0.0.1]/',
    'http://0/',
  ]) {
    const host = new URL(u).hostname;
    t.ok(isForbiddenAddress(host), `${u} (host ${host}) is forbidden`);
  }
});
