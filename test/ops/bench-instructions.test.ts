/**
 * The instruction counts of `--mode=instructions` (bench/instructions.ts): its reading of a
 * callgrind dump, checked on a real dump of a real program against valgrind's own
 * callgrind_annotate, and the rules of the format it relies on.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INSTRUCTION_VARIANTS, measureInstructions, parseCallgrindThread, which } from '../../bench/instructions.js';

t.test("a call's inclusive cost goes to the callee, never to the caller's object", async (t) => {
  const dump = [
    '# callgrind format',
    'version: 1',
    'thread: 3',
    'events: Ir',
    'ob=(1) /usr/bin/node',
    'fl=(1) ???',
    'fn=(1) caller',
    '0 100',
    'cob=(2) /x/secp256k1.glibc.node',
    'cfi=(1)',
    'cfn=(2) secp256k1_ec_pubkey_create',
    'calls=7 0',
    '0 7000',
    '+1 5',
    'cfn=(2)',
    'calls=3 0',
    '0 3000',
    'ob=(2)',
    'fn=(2)',
    '0 10000',
    '',
    'totals: 10105',
    '',
  ].join('\n');
  const r = parseCallgrindThread(dump);
  t.equal(r.thread, 3);
  t.equal(r.total, 10105);
  t.equal(r.byObject.get('/usr/bin/node'), 105, "the caller's own instructions only");
  t.equal(r.byObject.get('/x/secp256k1.glibc.node'), 10000, "the callee's, once");
  t.equal(r.pointMultiplications, 10, 'both call sites of the point multiplication counted');
});

t.test("the nonces addon's k·G counts a nonce per call, as the binding's key creation does", async (t) => {
  // One chunk of 1,024 nonces: the addon's Prepare calls its k·G once per nonce.
  const dump = `thread: 4
ob=(1) /p/native/nonces/build/Release/nonces.node
fn=(1) Prepare
0 50
cfn=(2) nonce_point
calls=1024 0
0 9000000
fn=(2)
0 9000000
totals: 9000050
`;
  const r = parseCallgrindThread(dump);
  t.equal(r.pointMultiplications, 1024);
  t.equal(r.byObject.get('/p/native/nonces/build/Release/nonces.node'), 9000050);
});

t.test('a real dump: every instruction counted once, by object as callgrind_annotate counts them', async (t) => {
  if (which('valgrind') === null || which('callgrind_annotate') === null) {
    if (process.env.CI === 'true') t.fail('valgrind is required in CI (.ci/run installs it)');
    else t.plan(0, 'skipped: valgrind is not installed (Debian: apt-get install valgrind)');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'preflight-cg-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  execFileSync(
    'valgrind',
    [
      '--tool=callgrind',
      '--separate-threads=yes',
      `--callgrind-out-file=${join(dir, 'cg.%p')}`,
      'sort',
      '/etc/services',
    ],
    { stdio: 'ignore' },
  );
  const files = readdirSync(dir).filter((f) => /\.\d+-\d+$/.test(f) || /^cg\.\d+$/.test(f));
  t.ok(files.length >= 1, 'one dump per thread');
  const file = join(dir, files.sort()[files.length - 1]);
  const r = parseCallgrindThread(readFileSync(file, 'utf8'));
  t.ok(r.total > 10_000, `a real count (${r.total})`);
  const sum = [...r.byObject.values()].reduce((a, b) => a + b, 0);
  t.equal(sum, r.total, "the objects' own instructions add up to the dump's total");
  // callgrind_annotate, valgrind's own reader: exclusive cost per function, with its object in
  // brackets, except for code inlined from another source file, which it lists without one.
  const annotated = execFileSync('callgrind_annotate', ['--inclusive=no', '--threshold=100', file], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const programTotal = /^\s*([\d,]+) \([\s\d.]+%\)\s+PROGRAM TOTALS/m.exec(annotated);
  t.equal(Number(programTotal?.[1].replace(/,/g, '')), r.total, "the dump's total is callgrind_annotate's");
  const bracketed = new Map<string, number>();
  let unbracketed = 0;
  for (const line of annotated.split('\n')) {
    const m = /^\s*([\d,]+) \([\s\d.]+%\)\s+(.*)$/.exec(line);
    if (m === null || m[2] === 'PROGRAM TOTALS') continue;
    const n = Number(m[1].replace(/,/g, ''));
    const object = /\[([^\]]+)\]\s*$/.exec(m[2])?.[1];
    if (object === undefined) unbracketed += n;
    else bracketed.set(object, (bracketed.get(object) ?? 0) + n);
  }
  t.ok(bracketed.size >= 2, 'callgrind_annotate lists the program and its libraries');
  t.equal(bracketed.get('/usr/bin/sort'), r.byObject.get('/usr/bin/sort'), "the program's own code, the same");
  let inlined = 0;
  for (const [object, n] of bracketed) {
    const ours = r.byObject.get(object) ?? 0;
    t.ok(ours >= n, `${object}: ${ours} >= ${n}`);
    inlined += ours - n;
  }
  t.equal(
    inlined,
    unbracketed,
    'what each object has beyond its listed functions is the inlined code listed without one',
  );
});

t.test(
  '--only picks the variants to count; a name that is none of them is refused before anything starts',
  async (t) => {
    t.same(
      INSTRUCTION_VARIANTS.filter((v) => v.byDefault).map((v) => v.name),
      ['unsigned', 'signed', 'signed-inline'],
      'the cached decide three by default',
    );
    const names = INSTRUCTION_VARIANTS.map((v) => v.name);
    for (const v of INSTRUCTION_VARIANTS)
      if (v.against !== undefined) t.ok(names.includes(v.against), `${v.name} is compared with a variant there is`);
    const policy = INSTRUCTION_VARIANTS.find((v) => v.name === 'guard-policy');
    const swap = INSTRUCTION_VARIANTS.find((v) => v.name === 'guard-swap');
    t.equal(policy?.body, swap?.body, 'the policy pair asks the same guard');
    t.ok(policy?.policy && !swap?.policy, 'one under a policy, one without');
    const floor = INSTRUCTION_VARIANTS.find((v) => v.name === 'floor');
    t.equal(floor?.program, 'floor', 'the floor variant counts bench/floor.ts, not the service');
    t.notOk(floor?.byDefault, 'on request only');
    t.equal(
      INSTRUCTION_VARIANTS.find((v) => v.name === 'unsigned')?.against,
      'floor',
      'the unsigned decide is compared with its yardstick when both are counted',
    );
    const upstreams = {} as Parameters<typeof measureInstructions>[0];
    await t.rejects(measureInstructions(upstreams, true, ['nope']), /--only names no variant/);
  },
);
