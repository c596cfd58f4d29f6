/** Operator-configured URLs are trusted; the same kind of address supplied by a caller is refused. */
import t from 'tap';
import { startTestApp, post } from '../helpers/app.js';
import { startStatusPage } from '../emulators/statuspage.js';
import { isOperatorUrl } from '../../src/checks/trust.js';

t.test('isOperatorUrl', async (t) => {
  const cfg = { rpcUrls: { base: 'http://10.0.0.5:8545' }, bridgeStatusUrls: ['http://10.0.0.6/status'] };
  t.ok(isOperatorUrl(cfg, 'http://10.0.0.5:8545'));
  t.ok(isOperatorUrl(cfg, 'http://10.0.0.6/status'));
  t.notOk(isOperatorUrl(cfg, 'http://10.0.0.7/status'));
});

t.test(
  'guard bridge on the operator status URL works on a private address; a caller URL there is refused',
  async (t) => {
    const page = await startStatusPage();
    const operatorUrl = `${page.url}/api/v2/status.json`;
    const app = await startTestApp({ BRIDGE_STATUS_URLS: operatorUrl, ALLOW_PRIVATE_TARGETS: 'false' });
    t.teardown(async () => {
      await app.close();
      await page.close();
    });
    const guard = await post(`${app.url}/v1/guard`, {
      action: 'bridge',
      strict_mode: false,
      context: { deadline_ms: 2000 },
    });
    t.equal(guard.status, 200);
    t.equal(guard.body.checks.bridge_exploit_monitor, 'pass', JSON.stringify(guard.body.evidence));
    const before = page.stats.requests;
    const decide = await post(`${app.url}/v1/decide`, {
      goal: 'g',
      checks: [{ type: 'bridge_exploit_monitor', status_url: `${page.url}/other` }],
    });
    t.match(decide.body.evidence[0], { status: 'fail', reason: 'target_forbidden' });
    t.equal(page.stats.requests, before, 'the refused URL was never fetched');
  },
);
