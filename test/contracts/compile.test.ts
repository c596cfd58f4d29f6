/**
 * The test contracts compile with the pinned solc and behave as their names say on a real anvil.
 */
import { type Contract, ContractFactory, MaxUint256 } from 'ethers';
import t from 'tap';
import { compileContracts, compiled, SOLC_VERSION } from '../../contracts/compile.js';
import { startAnvil } from '../helpers/anvil.js';

t.test('compiles every contract of contracts/test once per process', async (t) => {
  const all = compileContracts();
  for (const name of ['TestToken', 'TestNft', 'TestMulti', 'FairSwap', 'DrainSwap', 'Reverter', 'TestPermit2']) {
    t.ok(all[name], name);
    t.match(all[name].bytecode, /^0x[0-9a-f]{100,}$/, `${name} has creation code`);
    t.match(all[name].deployedBytecode, /^0x[0-9a-f]{100,}$/, `${name} has runtime code`);
  }
  t.equal(compileContracts(), all, 'the second call is the cached result');
  t.equal(SOLC_VERSION, '0.8.30');
});

t.test('the contracts do what their names say on anvil', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.close());
  const deploy = async (name: string, ...args: unknown[]) => {
    const c = compiled(name);
    const ct = await new ContractFactory(c.abi as never, c.bytecode, anvil.wallet).deploy(...args);
    await ct.waitForDeployment();
    return ct as Contract;
  };
  const a = await deploy('TestToken', 'Token A', 'TKA', 18);
  const b = await deploy('TestToken', 'Token B', 'TKB', 6);
  const fair = await deploy('FairSwap');
  const drain = await deploy('DrainSwap');
  const me = anvil.wallet.address;
  await (await a.mint(me, 1000n)).wait();
  await (await b.mint(await fair.getAddress(), 500n)).wait();
  await (await a.approve(await fair.getAddress(), MaxUint256)).wait();
  await (await a.approve(await drain.getAddress(), MaxUint256)).wait();

  await (await fair.swap(await a.getAddress(), 100n, await b.getAddress(), 50n)).wait();
  t.equal(await a.balanceOf(me), 900n, 'the fair swap took 100 A');
  t.equal(await b.balanceOf(me), 50n, 'and paid 50 B');
  await (await drain.swap(await a.getAddress(), 100n, await b.getAddress(), 50n)).wait();
  t.equal(await a.balanceOf(me), 800n, 'the drain took 100 A');
  t.equal(await b.balanceOf(me), 50n, 'and paid nothing');

  const rev = await deploy('Reverter');
  await t.rejects(rev.failWithReason.staticCall(), /Reverter: always fails/);
  await t.rejects(rev.failWithPanic.staticCall(0n), /division or modulo by zero|panic|0x12/i);
});
