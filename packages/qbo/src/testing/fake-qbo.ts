import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/**
 * A local QuickBooks Online-compatible server for tests (not product code), built from the real recordings in
 * ../testdata: Intuit's token endpoint with refresh-token rotation, the v3 API's entity reads, creates, sparse
 * updates and deletes with SyncToken checks and `requestid` deduplication, the multipart upload of an Attachable's
 * file (answered in the recorded shape, its bytes kept), queries, reports, and, on demand, each
 * Fault kind, throttling, 5xx, and a connection dropped after the request was received (and acted on). Each
 * authorization reaches the one company it was granted for (another company's calls are an AuthorizationFault, 403),
 * and the revoke endpoint ends the whole authorization, recording the token it was given.
 */

const TESTDATA = join(import.meta.dirname, '../testdata');
const readJson = (path: string) => JSON.parse(readFileSync(join(TESTDATA, path), 'utf8')) as Record<string, unknown>;

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  authorization: string | undefined;
}

/** What to do instead of answering normally, to the next request that matches. */
export type Injection =
  | { kind: 'status'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'fault'; file: string; status?: number }
  /** Acts on the request (a write is applied), then drops the connection without answering. */
  | { kind: 'drop-after' }
  /** Drops the connection before acting. */
  | { kind: 'drop-before' };

interface Pending {
  match: (req: RecordedRequest) => boolean;
  injection: Injection;
  times: number;
}

type Entity = Record<string, unknown> & { Id: string; SyncToken: string };

/** One part of a multipart upload as received: its name, filename, content type and bytes. */
export interface UploadedPart {
  name: string;
  fileName: string | null;
  contentType: string;
  bytes: Buffer;
}

/** A recorded exchange's answer (an `uploads/*.http.json` file). */
const recordedAnswer = (path: string) =>
  (readJson(path) as { exchanges: { response: { body: Record<string, unknown> } }[] }).exchanges[0]?.response
    .body as Record<string, unknown>;

export class FakeQbo {
  readonly requests: RecordedRequest[] = [];
  /** The tokens the revoke endpoint was given, in order. */
  readonly revocations: string[] = [];
  /** Refresh tokens spent (each may be used once), and how many refreshes happened. */
  refreshCount = 0;
  /** How many rows the GeneralLedger report has. */
  generalLedgerRows = 0;
  readonly clientId = 'fake-client-id';
  readonly clientSecret = 'fake-client-secret';
  readonly realmId = '9130355377388886';
  /** The companies that answer (they share one set of records); `newRealm` adds one. */
  private readonly realms = new Set(['9130355377388886']);
  private realmCounter = 1;
  /** Live access tokens: when each expires, the company it reaches, and the refresh token issued with it. */
  private readonly accessTokens = new Map<string, { expires: number; realmId: string; refreshToken: string }>();
  /** Live refresh tokens and authorization codes, each with the company it was granted for. */
  private readonly refreshTokens = new Map<string, string>();
  private readonly codes = new Map<string, string>();
  private readonly entities = new Map<string, Map<string, Entity>>();
  private readonly byRequestId = new Map<string, { status: number; body: unknown }>();
  /** The parts of each upload that created an Attachable, by the Attachable's Id. */
  private readonly uploads = new Map<string, UploadedPart[]>();
  private readonly pending: Pending[] = [];
  private nextId = 1000;
  private server: Server | null = null;
  base = '';

  constructor() {
    // Every entity the v3 API has that the gateway covers, recorded or not.
    for (const entity of ['Vendor', 'VendorCredit', 'Transfer', 'Employee', 'Class', 'Department', 'Attachable'])
      this.table(entity);
    for (const entity of readdirSync(join(TESTDATA, 'entities'))) {
      for (const file of readdirSync(join(TESTDATA, 'entities', entity))) {
        const record = readJson(join('entities', entity, file)) as Entity;
        this.table(entity).set(record.Id, record);
      }
    }
    this.addCompanyInfo(this.realmId, 1);
  }

  /** Each company answers `companyinfo/{realmId}` with its own record. */
  private addCompanyInfo(realmId: string, n: number): void {
    const at = '2023-02-20T10:00:00-08:00';
    this.table('CompanyInfo').set(realmId, {
      Id: realmId,
      SyncToken: '3',
      CompanyName: `Sandbox Company_US_${n}`,
      Country: 'US',
      MetaData: { CreateTime: at, LastUpdatedTime: at },
    });
  }

  private table(entity: string): Map<string, Entity> {
    let t = this.entities.get(entity);
    if (!t) {
      t = new Map();
      this.entities.set(entity, t);
    }
    return t;
  }

  /** An authorization code the token endpoint accepts once, as if the user had consented. */
  issueCode(realmId = this.realmId): string {
    const code = `code-${randomBytes(8).toString('hex')}`;
    this.codes.set(code, realmId);
    return code;
  }

  /** Another company id the server answers for, for a test that needs a connection of its own. */
  newRealm(): string {
    const realm = `91303553774${String(this.realmCounter++).padStart(5, '0')}`;
    this.realms.add(realm);
    this.addCompanyInfo(realm, this.realmCounter);
    return realm;
  }

  /** Makes every access token expire now (the next call gets a 401). */
  expireAccessTokens(): void {
    for (const granted of this.accessTokens.values()) granted.expires = 0;
  }

  /** Revokes the refresh tokens of a company (its user disconnected the app at Intuit). */
  revokeRefreshTokens(realmId: string): void {
    for (const [token, realm] of this.refreshTokens) if (realm === realmId) this.refreshTokens.delete(token);
  }

  /** Whether an access or refresh token still works (neither revoked nor, for an access token, expired). */
  isLive(token: string): boolean {
    return this.refreshTokens.has(token) || (this.accessTokens.get(token)?.expires ?? 0) > Date.now();
  }

  /** Ends the authorization a token belongs to: its refresh token and every access token issued with it. */
  private revoke(token: string): void {
    const refresh = this.accessTokens.get(token)?.refreshToken ?? token;
    this.refreshTokens.delete(refresh);
    for (const [access, granted] of this.accessTokens)
      if (granted.refreshToken === refresh) this.accessTokens.delete(access);
  }

  record(entity: string, id: string): Entity | undefined {
    return this.table(entity).get(id);
  }

  count(entity: string): number {
    return this.table(entity).size;
  }

  /** The parts of the upload that created Attachable `id` (metadata, then the file), as they arrived. */
  uploaded(id: string): UploadedPart[] | undefined {
    return this.uploads.get(id);
  }

  /** The next `times` requests that match answer with `injection`. */
  inject(injection: Injection, match: (req: RecordedRequest) => boolean = () => true, times = 1): void {
    this.pending.push({ match, injection, times });
  }

  clearInjections(): void {
    this.pending.length = 0;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((err: unknown) => {
        res.statusCode = 500;
        res.end(String(err));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.base;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** The environment a QBO configuration reads, pointing at this server. */
  env(): Record<string, string> {
    return {
      QBO_CLIENT_ID: this.clientId,
      QBO_CLIENT_SECRET: this.clientSecret,
      QBO_REDIRECT_URI: 'http://127.0.0.1/api/qbo/callback',
      QBO_AUTHORIZE_URL: `${this.base}/connect/oauth2`,
      QBO_TOKEN_URL: `${this.base}/oauth2/v1/tokens/bearer`,
      QBO_REVOKE_URL: `${this.base}/v2/oauth2/tokens/revoke`,
      QBO_API_BASE_URL: this.base,
    };
  }

  private issueTokens(realmId: string) {
    const access = `at-${randomBytes(12).toString('hex')}`;
    const refresh = `rt-${randomBytes(12).toString('hex')}`;
    this.accessTokens.set(access, { expires: Date.now() + 3600_000, realmId, refreshToken: refresh });
    this.refreshTokens.set(refresh, realmId);
    const recorded = readJson('oauth/dotnet_sdk.token_refresh_response.json');
    return { ...recorded, access_token: access, refresh_token: refresh, id_token: undefined };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://fake');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const contentType = req.headers['content-type'] ?? '';
    const parts = contentType.startsWith('multipart/form-data')
      ? await partsOf(Buffer.concat(chunks), contentType)
      : null;
    const raw = parts ? '' : Buffer.concat(chunks).toString('utf8');
    const isForm = contentType.includes('x-www-form-urlencoded');
    // A multipart body is recorded as its parts' names, filenames, types and sizes (the bytes are kept by `uploaded`).
    const body: unknown = parts
      ? parts.map(({ bytes, ...part }) => ({ ...part, size: bytes.length }))
      : raw
        ? isForm
          ? Object.fromEntries(new URLSearchParams(raw))
          : JSON.parse(raw)
        : null;
    const recorded: RecordedRequest = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      body,
      authorization: req.headers.authorization,
    };
    this.requests.push(recorded);
    const send = (status: number, payload: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };

    const index = this.pending.findIndex((p) => p.match(recorded));
    const injected = index >= 0 ? (this.pending[index] as Pending) : null;
    if (injected) {
      injected.times--;
      if (injected.times <= 0) this.pending.splice(index, 1);
      const inj = injected.injection;
      if (inj.kind === 'drop-before') return void req.socket.destroy();
      if (inj.kind === 'status') return send(inj.status, inj.body ?? {}, inj.headers);
      if (inj.kind === 'fault') return send(inj.status ?? 400, readJson(join('errors', inj.file)));
    }
    const answer = (status: number, payload: unknown) => {
      if (injected?.injection.kind === 'drop-after') return void req.socket.destroy();
      send(status, payload);
    };

    if (url.pathname === '/oauth2/v1/tokens/bearer') return this.token(recorded, answer);
    if (url.pathname === '/v2/oauth2/tokens/revoke') {
      const expected = `Basic ${Buffer.from(`${this.clientId}:${this.clientSecret}`).toString('base64')}`;
      if (recorded.authorization !== expected) return answer(401, { error: 'invalid_client' });
      const token = (body as { token?: unknown } | null)?.token;
      if (typeof token !== 'string' || !token) return answer(400, { error: 'invalid_request' });
      this.revocations.push(token);
      this.revoke(token);
      return answer(200, {});
    }
    const m = /^\/v3\/company\/([^/]+)\/(.+)$/.exec(url.pathname);
    if (!m) return answer(404, {});
    const granted = this.accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    if (!granted || granted.expires < Date.now()) {
      return answer(401, {
        fault: {
          error: [
            {
              message: 'message=AuthenticationFailed; errorCode=003200; statusCode=401',
              detail: 'Token expired',
              code: '3200',
            },
          ],
          type: 'AUTHENTICATION',
        },
      });
    }
    if (!this.realms.has(m[1] as string) || granted.realmId !== m[1]) {
      // The answer QBO gives a token that was not granted this company.
      return answer(403, {
        Fault: {
          Error: [
            { Message: 'message=ApplicationAuthorizationFailed; errorCode=003100; statusCode=403', code: '003100' },
          ],
          type: 'AuthorizationFault',
        },
        time: new Date().toISOString(),
      });
    }
    const rest = m[2] as string;
    const requestId = url.searchParams.get('requestid');
    if (recorded.method === 'POST' && requestId) {
      const earlier = this.byRequestId.get(requestId);
      if (earlier) return answer(earlier.status, earlier.body);
    }
    const [status, payload] =
      recorded.method === 'POST' && rest === 'upload'
        ? this.upload(m[1] as string, parts ?? [])
        : this.api(recorded.method, rest, url.searchParams, body as Record<string, unknown> | null);
    if (recorded.method === 'POST' && requestId) this.byRequestId.set(requestId, { status, body: payload });
    answer(status, payload);
  }

  private token(req: RecordedRequest, answer: (status: number, payload: unknown) => void): void {
    const expected = `Basic ${Buffer.from(`${this.clientId}:${this.clientSecret}`).toString('base64')}`;
    if (req.authorization !== expected) return answer(401, { error: 'invalid_client' });
    const form = req.body as Record<string, string>;
    const invalid = () =>
      answer(400, (readJson('oauth/oauth-jsclient.token_error_invalid_grant.json') as { body: unknown }).body);
    if (form.grant_type === 'authorization_code') {
      const realm = this.codes.get(form.code ?? '');
      if (!realm) return invalid();
      this.codes.delete(form.code ?? '');
      return answer(200, this.issueTokens(realm));
    }
    if (form.grant_type === 'refresh_token') {
      // Rotation: a refresh token is spent by its use.
      const realm = this.refreshTokens.get(form.refresh_token ?? '');
      if (!realm) return invalid();
      this.refreshTokens.delete(form.refresh_token ?? '');
      this.refreshCount++;
      return answer(200, this.issueTokens(realm));
    }
    return answer(400, { error: 'unsupported_grant_type' });
  }

  private entityName(segment: string): string | null {
    const lower = segment.toLowerCase();
    for (const name of this.entities.keys()) if (name.toLowerCase() === lower) return name;
    return null;
  }

  private api(
    method: string,
    rest: string,
    params: URLSearchParams,
    body: Record<string, unknown> | null,
  ): [number, unknown] {
    const time = new Date().toISOString();
    const fault = (file: string, status = 400): [number, unknown] => [status, readJson(join('errors', file))];
    if (method === 'GET' && rest === 'query') return this.query(params.get('query') ?? '');
    if (method === 'GET' && rest.startsWith('reports/')) {
      const name = rest.slice('reports/'.length);
      if (name === 'ProfitAndLoss') return [200, readJson('reports/quickbooks-types.profit_and_loss.body.json')];
      if (name === 'BalanceSheet') return [200, readJson('reports/php_sdk.balance_sheet_no_data.body.json')];
      // A report as long as the test asks (`generalLedgerRows`), every row kept.
      const rows = Array.from({ length: name === 'GeneralLedger' ? this.generalLedgerRows : 0 }, (_, i) => ({
        ColData: [{ value: `2023-01-${String((i % 28) + 1).padStart(2, '0')}` }, { value: `Line ${i + 1}` }],
      }));
      return [200, { Header: { ReportName: name }, Columns: { Column: [] }, Rows: { Row: rows } }];
    }
    const [segment, id] = rest.split('/');
    const entity = this.entityName(segment ?? '');
    if (!entity)
      return [400, { Fault: { Error: [{ Message: 'Unsupported Operation', code: '500' }], type: 'ValidationFault' } }];
    const table = this.table(entity);
    if (method === 'GET') {
      const record = table.get(id ?? '');
      return record ? [200, { [entity]: record, time }] : fault('exquickbooks.610_object_not_found.body.json');
    }
    if (!body) return fault('exquickbooks.2020_required_param_missing_name.body.json');
    if (params.get('operation') === 'delete') {
      const record = table.get(String(body.Id));
      if (!record) return fault('exquickbooks.610_object_not_found.body.json');
      if (String(body.SyncToken) !== record.SyncToken)
        return fault('exquickbooks.5010_stale_object_item_update.body.json');
      table.delete(record.Id);
      return [200, { [entity]: { Id: record.Id, status: 'Deleted', domain: 'QBO' }, time }];
    }
    if (body.Id !== undefined) {
      const record = table.get(String(body.Id));
      if (!record) return fault('exquickbooks.610_object_not_found.body.json');
      if (String(body.SyncToken) !== record.SyncToken)
        return fault('exquickbooks.5010_stale_object_item_update.body.json');
      const meta = (record.MetaData ?? {}) as Record<string, unknown>;
      const { sparse: _sparse, ...changes } = body;
      const updated = {
        ...(body.sparse === true ? record : {}),
        ...changes,
        Id: record.Id,
        SyncToken: String(Number(record.SyncToken) + 1),
        MetaData: { ...meta, LastUpdatedTime: time },
      } as Entity;
      table.set(record.Id, updated);
      return [200, { [entity]: updated, time }];
    }
    if ((entity === 'Customer' || entity === 'Vendor') && typeof body.DisplayName !== 'string') {
      return fault('exquickbooks.2020_required_param_missing_name.body.json');
    }
    const created = {
      ...body,
      Id: String(this.nextId++),
      SyncToken: '0',
      domain: 'QBO',
      sparse: false,
      MetaData: { CreateTime: time, LastUpdatedTime: time },
    } as Entity;
    table.set(created.Id, created);
    return [200, { [entity]: created, time }];
  }

  /**
   * QBO's upload: `file_metadata_01` (the Attachable, JSON) and `file_content_01` (the file) make one Attachable,
   * answered as `AttachableResponse[0].Attachable` in the recorded shape. A record its AttachableRef names that does
   * not exist is QBO's recorded answer to that: HTTP 200 with a ValidationFault 6000 in the item.
   */
  private upload(realmId: string, parts: UploadedPart[]): [number, unknown] {
    const time = new Date().toISOString();
    const invalid = (message: string): [number, unknown] => [
      400,
      { Fault: { Error: [{ Message: message, code: '2020' }], type: 'ValidationFault' }, time },
    ];
    const metadataPart = parts.find((p) => p.name === 'file_metadata_01');
    const content = parts.find((p) => p.name === 'file_content_01');
    if (!metadataPart || !content) return invalid('Required parameter file_metadata_01 and file_content_01 missing');
    let metadata: Record<string, unknown>;
    try {
      metadata = JSON.parse(metadataPart.bytes.toString('utf8')) as Record<string, unknown>;
    } catch {
      return invalid('file_metadata_01 is not JSON');
    }
    const refs = Array.isArray(metadata.AttachableRef) ? (metadata.AttachableRef as Record<string, unknown>[]) : [];
    for (const ref of refs) {
      const entityRef = (ref.EntityRef ?? {}) as { type?: string; value?: string };
      const entity = this.entityName(entityRef.type ?? '');
      if (!entity || !this.table(entity).has(String(entityRef.value))) {
        const recorded = recordedAnswer('uploads/qbo_api.200_6000_attachable_business_validation.http.json');
        const what = `${entityRef.type} ${entityRef.value}`;
        const detail = `Business Validation Error: The entity ${what} that you are trying to link does not exist. ${what}`;
        const item = (recorded.AttachableResponse as { Fault: { Error: Record<string, unknown>[] } }[])[0];
        const error = { ...item?.Fault.Error[0], Detail: detail };
        return [200, { AttachableResponse: [{ Fault: { ...item?.Fault, Error: [error] } }], time }];
      }
    }
    const id = String(this.nextId++);
    const fileName = String(metadata.FileName ?? content.fileName ?? 'attachment');
    const created = {
      ...(typeof metadata.Note === 'string' ? { Note: metadata.Note } : {}),
      FileName: fileName,
      FileAccessUri: `/v3/company/${realmId}/download/${id}`,
      TempDownloadUri: `${this.base}/attachments/${realmId}/${id}/${encodeURIComponent(fileName)}`,
      Size: content.bytes.length,
      ContentType: String(metadata.ContentType ?? content.contentType),
      domain: 'QBO',
      sparse: false,
      Id: id,
      SyncToken: '0',
      MetaData: { CreateTime: time, LastUpdatedTime: time },
      AttachableRef: refs.map((ref) => ({ IncludeOnSend: false, ...ref })),
    } as Entity;
    this.table('Attachable').set(id, created);
    this.uploads.set(id, parts);
    return [200, { AttachableResponse: [{ Attachable: created }], time }];
  }

  /** Enough of QBO's query language for the adapter: select, where (AND of comparisons, IN, LIKE), order, page. */
  private query(text: string): [number, unknown] {
    const m =
      /^SELECT\s+(.+?)\s+FROM\s+(\w+)(?:\s+WHERE\s+(.+?))?(?:\s+ORDERBY\s+(.+?))?(?:\s+STARTPOSITION\s+(\d+))?(?:\s+MAXRESULTS\s+(\d+))?\s*$/i.exec(
        text.trim(),
      );
    if (!m) return [400, readJson('errors/exquickbooks.4000_query_parser_error.body.json')];
    const entity = this.entityName(m[2] as string);
    if (!entity) return [400, readJson('errors/exquickbooks.4000_query_parser_error.body.json')];
    const conditions = (m[3] ? m[3].split(/\s+AND\s+/i) : []).map((c) => {
      const cm = /^(\w+)\s*(=|!=|<=|>=|<|>|LIKE|IN)\s*(.+)$/i.exec(c.trim());
      if (!cm) return null;
      const literal = (v: string) => {
        const s = v.trim();
        return s.startsWith("'") ? s.slice(1, -1).replaceAll("\\'", "'").replaceAll('\\\\', '\\') : s;
      };
      const values =
        (cm[2] as string).toUpperCase() === 'IN'
          ? (cm[3] as string)
              .replace(/^\(|\)$/g, '')
              .split(',')
              .map(literal)
          : [literal(cm[3] as string)];
      return { field: cm[1] as string, op: (cm[2] as string).toUpperCase(), values };
    });
    if (conditions.includes(null)) return [400, readJson('errors/exquickbooks.4000_query_parser_error.body.json')];
    const matches = (record: Entity) =>
      conditions.every((c) => {
        if (!c) return false;
        const raw = record[c.field];
        const actual =
          typeof raw === 'object' && raw !== null ? String((raw as { value?: unknown }).value) : String(raw);
        const [v] = c.values as [string];
        const num = (x: string) => (x !== '' && !Number.isNaN(Number(x)) ? Number(x) : x);
        switch (c.op) {
          case '=':
            return actual === v;
          case '!=':
            return actual !== v;
          case 'IN':
            return c.values.includes(actual);
          case 'LIKE':
            return new RegExp(`^${v.replaceAll('%', '.*')}$`, 'i').test(actual);
          case '<':
            return num(actual) < num(v);
          case '<=':
            return num(actual) <= num(v);
          case '>':
            return num(actual) > num(v);
          default:
            return num(actual) >= num(v);
        }
      });
    const all = [...this.table(entity).values()].filter(matches).sort((a, b) => Number(a.Id) - Number(b.Id));
    const time = new Date().toISOString();
    if (/^COUNT\(\*\)$/i.test(m[1] as string)) return [200, { QueryResponse: { totalCount: all.length }, time }];
    const start = Number(m[5] ?? 1);
    const max = Number(m[6] ?? 100);
    const page = all.slice(start - 1, start - 1 + max);
    return [
      200,
      { QueryResponse: page.length ? { [entity]: page, startPosition: start, maxResults: page.length } : {}, time },
    ];
  }
}

/** The parts of a multipart/form-data body, parsed by the platform's own Fetch implementation. */
async function partsOf(body: Buffer, contentType: string): Promise<UploadedPart[]> {
  const form = await new Response(body, { headers: { 'content-type': contentType } }).formData();
  const parts: UploadedPart[] = [];
  for (const [name, value] of form) {
    parts.push(
      typeof value === 'string'
        ? { name, fileName: null, contentType: 'text/plain', bytes: Buffer.from(value) }
        : { name, fileName: value.name, contentType: value.type, bytes: Buffer.from(await value.arrayBuffer()) },
    );
  }
  return parts;
}
