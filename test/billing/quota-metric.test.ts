/** A quota rejection is visible to the operator's dashboards. */
import t from 'tap';
import { startTestApp, post } from '../helpers/app.js';

t.test('a used-up key answers 429 and counts a quota rejection by plan', async (t) => {
  const app = await startTestApp({ BILLING: 'on', FREE_TIER_MONTHLY_LIMIT: '1' });
  t.teardown(() => app.close());
  const signup = await post(`${app.url}/v1/api-keys/signup`, { email: 'quota@example.com' });
  const key = signup.body.api_key as string;
  const body = { goal: 'g', checks: [{ type: 'approval_amount', amount: '0' }] };
  t.equal((await post(`${app.url}/v1/decide`, body, { 'x-api-key': key })).status, 200);
  const second = await post(`${app.url}/v1/decide`, body, { 'x-api-key': key });
  t.equal(second.status, 429);
  t.match(second.body, { limit: 1, used: Number, resets_at: /^\d{4}-\d\d-01T00:00:00/, pay_per_call: null });
  const scrape = await (await fetch(`${app.url}/metrics`)).text();
  t.match(scrape, /preflight_quota_rejections_total\{plan="Basic"\} 1/);
});
