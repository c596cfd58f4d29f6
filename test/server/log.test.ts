/** Log lines: gathered per turn of the event loop into one write, never lost, never reordered. */
import t from 'tap';
import { pino } from 'pino';
import { TurnBatch, accessLog, createLogger } from '../../src/log.js';

function sink() {
  const writes: string[] = [];
  let flushes = 0;
  let syncFlushes = 0;
  return {
    writes,
    get flushes() {
      return flushes;
    },
    get syncFlushes() {
      return syncFlushes;
    },
    write(chunk: string) {
      writes.push(chunk);
      return true;
    },
    flush(cb?: (err?: Error) => void) {
      flushes++;
      cb?.();
    },
    flushSync() {
      syncFlushes++;
    },
  };
}

t.test('the lines of one turn go out as one write, in order, when the turn ends', async (t) => {
  const s = sink();
  const log = pino({ base: null }, new TurnBatch(s));
  for (let i = 0; i < 50; i++) log.info({ i }, 'line');
  t.equal(s.writes.length, 0, 'nothing written during the turn');
  await new Promise((r) => setImmediate(r));
  t.equal(s.writes.length, 1, 'one write for the turn');
  const lines = s.writes[0]
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { i: number });
  t.same(
    lines.map((l) => l.i),
    Array.from({ length: 50 }, (_, i) => i),
  );
  log.info({ i: 50 }, 'next turn');
  await new Promise((r) => setImmediate(r));
  t.equal(s.writes.length, 2, 'the next turn writes its own');
});

t.test('flush writes what waits before the stream flushes', async (t) => {
  const s = sink();
  const log = pino({ base: null }, new TurnBatch(s));
  log.info('waiting');
  log.flush();
  t.equal(s.writes.length, 1);
  t.match(s.writes[0], /"msg":"waiting"/);
  t.equal(s.flushes, 1);
  await new Promise((r) => setImmediate(r));
  t.equal(s.writes.length, 1, 'nothing written twice');
});

t.test('the access line written directly is the line pino writes, byte for byte (but its time)', async (t) => {
  const cases: Array<[string, string, string, number, number, string | undefined]> = [
    ['3f1c2a9e-8d7b-4c6a-9e5f-1a2b3c4d5e6f', 'POST', '/v1/decide', 200, 1.25, 'key'],
    ['req.1:a_b-c', 'GET', '/health', 503, 0, undefined],
    ['x', 'PATCH', '/v1/policies/:name', 422, 1234.56, 'payment'],
    // Nothing the service passes needs escaping, but the writer must not depend on that.
    ['a"b\\c', 'M\u00e9THOD', 'unmatched \u2028 "route"', 404, 0.01, 'free "quoted"'],
  ];
  const direct = sink();
  const viaPino = sink();
  const write = accessLog(createLogger('info', direct));
  const child = createLogger('info', viaPino).child({}, { redact: { paths: [] } });
  for (const [reqId, method, route, status, ms, auth] of cases) {
    write(reqId, method, route, status, ms, auth);
    child.info({ reqId, method, route, status, ms, auth }, 'request');
  }
  await new Promise((r) => setImmediate(r));
  const lines = (s: ReturnType<typeof sink>) =>
    s.writes
      .join('')
      .trimEnd()
      .split('\n')
      .map((l) => l.replace(/"time":"[^"]+"/, '"time":"T"'));
  t.equal(lines(direct).length, cases.length, 'one line per request');
  t.same(lines(direct), lines(viaPino), "the same bytes as pino's own line");
  const parsed = lines(direct).map((l) => JSON.parse(l) as Record<string, unknown>);
  t.same(parsed[3], {
    level: 30,
    time: 'T',
    service: 'preflight',
    reqId: 'a"b\\c',
    method: 'M\u00e9THOD',
    route: 'unmatched \u2028 "route"',
    status: 404,
    ms: 0.01,
    auth: 'free "quoted"',
    msg: 'request',
  });
  t.notOk('auth' in parsed[1], 'no auth field when the call had none, as pino leaves out undefined');
  t.match(String(JSON.parse(direct.writes.join('').split('\n')[0]).time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
});

t.test("the access line honours the logger's level, and another logger gets pino's own path", async (t) => {
  const quiet = sink();
  const logger = createLogger('warn', quiet);
  const write = accessLog(logger);
  write('a', 'POST', '/v1/decide', 200, 1, 'key');
  await new Promise((r) => setImmediate(r));
  t.equal(quiet.writes.length, 0, 'nothing at level warn');
  logger.level = 'info';
  write('a', 'POST', '/v1/decide', 200, 1, 'key');
  await new Promise((r) => setImmediate(r));
  t.equal(quiet.writes.length, 1, 'written once the level is info');

  const other = sink();
  const plain = pino({ base: { who: 'other' }, redact: ['reqId'] }, other);
  accessLog(plain)('secret-id', 'POST', '/v1/decide', 200, 1, 'key');
  const line = JSON.parse(other.writes.join('')) as Record<string, unknown>;
  t.equal(line.who, 'other', "another logger's own bindings");
  t.equal(line.msg, 'request');
  t.equal(line.reqId, 'secret-id', 'its child drops the redaction, as the access line always has');
});
