import createFetchClient, { type Client, type ClientOptions } from 'openapi-fetch';
import type { components, operations, paths } from './schema';

export type { components, operations, paths };

/** The API's named schemas: `Schemas['Account']`, `Schemas['JournalEntry']`, `Schemas['Error']`... */
export type Schemas = components['schemas'];
export type Account = Schemas['Account'];
export type JournalEntry = Schemas['JournalEntry'];
export type Document = Schemas['Document'];
export type Contact = Schemas['Contact'];
export type PostingReceipt = Schemas['PostingReceipt'];
export type TrialBalance = Schemas['TrialBalance'];
export type User = Schemas['User'];
export type ApiKey = Schemas['ApiKey'];
export type ApiError = Schemas['Error'];

export type FirmClient = Client<paths>;

export interface FirmClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** The server's origin, e.g. `http://127.0.0.1:3000`; paths carry their `/api/v1` prefix. */
  baseUrl: string;
  /** An API key (`dk_live_…`) or an OAuth access token (`mcp_at_…`). */
  token: string;
}

/**
 * A typed client: `client.GET('/api/v1/companies/{companyId}/accounts', { params: { path: { companyId } } })`
 * answers `{ data, error, response }` with the route's own types.
 */
export function createFirmClient({ baseUrl, token, headers, ...options }: FirmClientOptions): FirmClient {
  return createFetchClient<paths>({
    ...options,
    baseUrl,
    headers: { ...(headers as Record<string, string> | undefined), authorization: `Bearer ${token}` },
  });
}
