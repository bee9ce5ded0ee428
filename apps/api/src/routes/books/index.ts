import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { getBookSettings, setBooksClosedThrough, setFiscalYearStartMonth } from '@firm/ledger';
import type { FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { CompanyParams, DataOf, IsoDate } from '../../schemas';
import { ledgerContext } from '../context';

const BookSettings = Type.Object(
  {
    booksClosedThrough: Type.Union([IsoDate(), Type.Null()], {
      description: 'Nothing dated on or before this date can be posted or voided. Null: the books are open.',
    }),
    fiscalYearStartMonth: Type.Integer({
      minimum: 1,
      maximum: 12,
      description:
        'Month (1-12) the fiscal year starts in: where the balance sheet splits retained and current earnings.',
    }),
  },
  { title: 'BookSettings' },
);

const UpdateBooksBody = Type.Object(
  {
    booksClosedThrough: Type.Optional(
      Type.Union([IsoDate(), Type.Null()], {
        description: 'Close the books through this date, move the date back, or null to reopen them entirely.',
      }),
    ),
    fiscalYearStartMonth: Type.Optional(Type.Integer({ minimum: 1, maximum: 12 })),
  },
  { additionalProperties: false, minProperties: 1, title: 'UpdateBooks' },
);

const tags = ['books'];
const description =
  'Owners and admins (scope books:close) close the books through a date: afterwards posting, voiding or ' +
  'backdating an entry on or before it is refused with 422 PERIOD_CLOSED. Moving the date back or setting null ' +
  'reopens. Each change writes an audit event (books.closed, books.reopened, books.fiscal_year_changed).';

export const bookRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const read = (request: FastifyRequest) => getBookSettings(app.database.db, request.organization.id);
  const update = async (request: FastifyRequest, body: Static<typeof UpdateBooksBody>) => {
    await app.database.db.transaction(async (tx) => {
      const ctx = ledgerContext(request);
      if (body.fiscalYearStartMonth !== undefined) {
        await setFiscalYearStartMonth(tx, ctx, request.organization.id, body.fiscalYearStartMonth);
      }
      if (body.booksClosedThrough !== undefined) {
        await setBooksClosedThrough(tx, ctx, request.organization.id, body.booksClosedThrough);
      }
    });
    // The organization's row changed: lookups that kept it start again.
    app.apiKeyCache.clear();
    return { data: await read(request) };
  };

  app.get(
    '/books',
    {
      config: { scope: 'entries:read', organization: 'header' },
      schema: { tags, summary: 'Closed-books date and fiscal year', response: { 200: DataOf(BookSettings) } },
    },
    async (request) => ({ data: await read(request) }),
  );
  app.patch(
    '/books',
    {
      config: { scope: 'books:close', organization: 'header' },
      schema: {
        tags,
        summary: 'Close or reopen the books; set the fiscal year',
        description,
        body: UpdateBooksBody,
        response: { 200: DataOf(BookSettings), ...errorResponses(415) },
      },
    },
    async (request) => update(request, request.body),
  );
  app.get(
    '/companies/:companyId/books',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Closed-books date and fiscal year (company path)',
        params: CompanyParams,
        response: { 200: DataOf(BookSettings) },
      },
    },
    async (request) => ({ data: await read(request) }),
  );
  app.patch(
    '/companies/:companyId/books',
    {
      config: { scope: 'books:close', organization: 'path' },
      schema: {
        tags,
        summary: 'Close or reopen the books; set the fiscal year (company path)',
        description,
        params: CompanyParams,
        body: UpdateBooksBody,
        response: { 200: DataOf(BookSettings), ...errorResponses(415) },
      },
    },
    async (request) => update(request, request.body),
  );
};
