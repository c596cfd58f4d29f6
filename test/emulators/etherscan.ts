/**
 * Etherscan v2 emulator: `GET /v2/api?chainid=&module=contract&action=getsourcecode&address=&apikey=`
 * with the shapes of test/fixtures/upstreams/etherscan. Errors come as HTTP 200 with status "0".
 * ETHERSCAN_API_URL is the emulator's `apiUrl`.
 */
import { Emulator } from './core.js';

const notok = (result: string): string => JSON.stringify({ status: '0', message: 'NOTOK', result });
export const ETHERSCAN_RATE_LIMIT_BODY = notok('Max rate limit reached, please use API Key for higher rate limit');
export const ETHERSCAN_INVALID_KEY_BODY = notok('Invalid API Key (#err2)');

const FIELDS = [
  'CompilerVersion',
  'CompilerType',
  'OptimizationUsed',
  'Runs',
  'ConstructorArguments',
  'Library',
  'ContractFileName',
  'Implementation',
  'SwarmSource',
  'SimilarMatch',
];

export class EtherscanEmulator extends Emulator {
  /** The key the emulator accepts; any other answers "Invalid API Key". */
  apiKey = 'TESTKEY';
  private readonly verified = new Map<string, string>();

  get apiUrl(): string {
    return `${this.url}/v2/api`;
  }

  setVerified(chainId: number, address: string, contractName = 'Test12345'): this {
    this.verified.set(`${chainId}/${address.toLowerCase()}`, contractName);
    return this;
  }

  constructor() {
    super();
    this.route('GET', '/v2/api', (req) => {
      const q = req.query;
      if (q.get('apikey') !== this.apiKey) return { body: ETHERSCAN_INVALID_KEY_BODY };
      if (!q.get('chainid'))
        return {
          body: notok(
            'Missing chainid parameter (required for v2 api), please see https://api.etherscan.io/v2/chainlist for the list of supported chainids',
          ),
        };
      if (q.get('module') !== 'contract' || q.get('action') !== 'getsourcecode')
        return { body: notok('Error! Missing Or invalid Action name') };
      const name = this.verified.get(`${q.get('chainid')}/${(q.get('address') ?? '').toLowerCase()}`);
      const entry: Record<string, string> = Object.fromEntries(FIELDS.map((f) => [f, '']));
      Object.assign(
        entry,
        name
          ? {
              SourceCode: 'pragma solidity 0.8.24;\r\ncontract T {}',
              ABI: '[]',
              ContractName: name,
              EVMVersion: 'Default',
              LicenseType: 'MIT',
              Proxy: '0',
            }
          : {
              SourceCode: '',
              ABI: 'Contract source code not verified',
              ContractName: '',
              EVMVersion: 'Default',
              LicenseType: 'Unknown',
              Proxy: '0',
            },
      );
      return { body: { status: '1', message: 'OK', result: [entry] } };
    });
  }
}

export async function startEtherscan(): Promise<EtherscanEmulator> {
  return new EtherscanEmulator().listen();
}
