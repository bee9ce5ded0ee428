import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  convertEstimate,
  createDocument,
  type DocumentType,
  getDocument,
  type LineDocumentType,
  listDocuments,
  type PaymentType,
  presentDocument,
  updateDocument,
  voidDocument,
  voidPayment,
} from '@firm/documents';
import type { FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { recordPayment } from '@firm/banking';
import { errorResponses } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import {
  CompanyParams,
  ConvertBody,
  ConvertResult,
  CreateDocumentBody,
  CustomerPaymentBody,
  DocumentList,
  DocumentListQuery,
  DocumentOne,
  RecordedPaymentOne,
  DocumentParams,
  ROUNDING_RULE,
  UpdateDocumentBody,
  VoidBody,
} from './schemas';

interface Kind {
  path: string;
  type: DocumentType;
  /** "an invoice", for summaries. */
  one: string;
  many: string;
  posts: string;
}

const LINE_KINDS: (Kind & { type: LineDocumentType })[] = [
  {
    path: 'invoices',
    type: 'invoice',
    one: 'an invoice',
    many: 'Invoices',
    posts: 'Posts accounts receivable (debit, the total) against each line’s income account and the tax liability.',
  },
  {
    path: 'sales-receipts',
    type: 'sales_receipt',
    one: 'a sales receipt',
    many: 'Sales receipts',
    posts: 'A sale paid at once: posts bankAccountId (debit, the total) against income and tax; status paid.',
  },
  {
    path: 'credit-memos',
    type: 'credit_memo',
    one: 'a credit memo',
    many: 'Credit memos',
    posts: 'Credits accounts receivable with the total; applied to invoices through customer payments (credits).',
  },
  {
    path: 'refund-receipts',
    type: 'refund_receipt',
    one: 'a refund receipt',
    many: 'Refund receipts',
    posts: 'Money paid back to a customer: credits bankAccountId with the total, debits income and tax.',
  },
  {
    path: 'estimates',
    type: 'estimate',
    one: 'an estimate',
    many: 'Estimates',
    posts: 'Posts nothing; POST /estimates/:id/convert makes it an invoice.',
  },
  {
    path: 'bills',
    type: 'bill',
    one: 'a bill',
    many: 'Bills',
    posts:
      'Credits accounts payable with the total, debits each line’s expense account and the tax rate’s liability ' +
      'account (reclaimable purchase tax). Paid through POST /bill-payments.',
  },
  {
    path: 'vendor-credits',
    type: 'vendor_credit',
    one: 'a vendor credit',
    many: 'Vendor credits',
    posts: 'Debits accounts payable with the total; applied to bills through bill payments (credits).',
  },
];

const PAYMENT_KINDS: (Kind & { type: PaymentType })[] = [
  {
    path: 'customer-payments',
    type: 'customer_payment',
    one: 'a customer payment',
    many: 'Customer payments',
    posts: 'Debits the deposit account and credits accounts receivable with the amount.',
  },
  {
    path: 'bill-payments',
    type: 'bill_payment',
    one: 'a bill payment',
    many: 'Bill payments',
    posts:
      'Debits accounts payable and credits the paying account. Created through the posting route POST /bill-payments.',
  },
];

const EDIT_RULE =
  'A posted document is changed by voiding its journal entry and posting a new one in the same transaction; ' +
  'this is refused with 422 DOCUMENT_NOT_EDITABLE once a payment or credit is applied to it, and for void or ' +
  'converted documents. A document dated in a closed period cannot be posted, changed or voided (422 PERIOD_CLOSED).';

const VOID_RULE =
  'Voids the document and its journal entry (both stay visible). Refused with 422 DOCUMENT_HAS_PAYMENTS while a ' +
  'payment or credit is applied to it: void the payment first. Voiding a payment reopens what it paid.';

export const documentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  const list = async (request: FastifyRequest, type: DocumentType) => {
    const { limit, ...rest } = request.query as Static<typeof DocumentListQuery>;
    const page = await listDocuments(db(), request.organization.id, type, { limit: limit ?? DEFAULT_LIMIT, ...rest });
    return { data: page.data.map(presentDocument), nextCursor: page.nextCursor };
  };

  for (const kind of [...LINE_KINDS, ...PAYMENT_KINDS]) {
    const tags = [kind.path];
    for (const form of ['header', 'path'] as const) {
      app.get(
        form === 'header' ? `/${kind.path}` : `/companies/:companyId/${kind.path}`,
        {
          config: { scope: 'documents:read', organization: form },
          schema: {
            tags,
            summary: `List ${kind.many.toLowerCase()}${form === 'path' ? ' of a company' : ''}`,
            description: `Ordered by date, then id. ${kind.posts}`,
            ...(form === 'path' ? { params: CompanyParams } : {}),
            querystring: DocumentListQuery,
            response: { 200: DocumentList },
          },
        },
        async (request) => list(request, kind.type),
      );
    }

    app.get(
      `/${kind.path}/:id`,
      {
        config: { scope: 'documents:read', organization: 'header' },
        schema: {
          tags,
          summary: `Read ${kind.one}`,
          params: DocumentParams,
          response: { 200: DocumentOne },
        },
      },
      async (request) => ({
        data: presentDocument(await getDocument(db(), request.organization.id, kind.type, request.params.id)),
      }),
    );

    app.post(
      `/${kind.path}/:id/void`,
      {
        config: { scope: 'documents:write', organization: 'header' },
        schema: {
          tags,
          summary: `Void ${kind.one}`,
          description: VOID_RULE,
          params: DocumentParams,
          body: VoidBody,
          response: { 200: DocumentOne, ...errorResponses(409, 415, 422) },
        },
      },
      async (request) => {
        const ctx = ledgerContext(request);
        const orgId = request.organization.id;
        const doc = await db().transaction((tx) =>
          kind.type === 'customer_payment' || kind.type === 'bill_payment'
            ? voidPayment(tx, ctx, orgId, kind.type, request.params.id, request.body.reason)
            : voidDocument(tx, ctx, orgId, kind.type as LineDocumentType, request.params.id, request.body.reason),
        );
        return { data: presentDocument(doc) };
      },
    );
  }

  for (const kind of LINE_KINDS) {
    const tags = [kind.path];
    app.post(
      `/${kind.path}`,
      {
        config: { scope: 'documents:write', organization: 'header' },
        schema: {
          tags,
          summary: `Create ${kind.one}`,
          description: `${kind.posts} ${ROUNDING_RULE}`,
          body: CreateDocumentBody,
          response: { 201: DocumentOne, ...errorResponses(409, 415, 422) },
        },
      },
      async (request, reply) => {
        const doc = await db().transaction((tx) =>
          createDocument(tx, ledgerContext(request), request.organization.id, kind.type, request.body),
        );
        return reply.code(201).send({ data: presentDocument(doc) });
      },
    );

    app.patch(
      `/${kind.path}/:id`,
      {
        config: { scope: 'documents:write', organization: 'header' },
        schema: {
          tags,
          summary: `Update ${kind.one}`,
          description: EDIT_RULE,
          params: DocumentParams,
          body: UpdateDocumentBody,
          response: { 200: DocumentOne, ...errorResponses(409, 415, 422) },
        },
      },
      async (request) => {
        const doc = await db().transaction((tx) =>
          updateDocument(
            tx,
            ledgerContext(request),
            request.organization.id,
            kind.type,
            request.params.id,
            request.body,
          ),
        );
        return { data: presentDocument(doc) };
      },
    );
  }

  app.post(
    '/estimates/:id/convert',
    {
      config: { scope: 'documents:write', organization: 'header' },
      schema: {
        tags: ['estimates'],
        summary: 'Convert an estimate into an invoice',
        description: 'Creates and posts an invoice with the estimate’s lines; the estimate becomes converted.',
        params: DocumentParams,
        body: ConvertBody,
        response: { 201: ConvertResult, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const result = await db().transaction((tx) =>
        convertEstimate(tx, ledgerContext(request), request.organization.id, request.params.id, request.body),
      );
      return reply
        .code(201)
        .send({ data: { estimate: presentDocument(result.estimate), invoice: presentDocument(result.invoice) } });
    },
  );

  app.post(
    '/customer-payments',
    {
      config: { scope: 'documents:write', organization: 'header' },
      schema: {
        tags: ['customer-payments'],
        summary: 'Record a customer payment',
        description:
          'Allocates the payment to invoices of the customer, optionally using credit memos towards them. An ' +
          'allocation larger than its document’s open balance is 422 OVER_ALLOCATION (checked under row locks and ' +
          'by the database); the same document twice is 422 DUPLICATE_ALLOCATION; a void document, another ' +
          'customer’s or an unknown one is 422 INVALID_ALLOCATION. Debits the deposit account, credits receivables. A ' +
          'deposit account with a bank register gets the payment’s row in it (bankTransactionIds), matched to the ' +
          'payment, as a bill payment’s paying account does.',
        body: CustomerPaymentBody,
        response: { 201: RecordedPaymentOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const b = request.body;
      const { document, bankTransactionIds } = await db().transaction((tx) =>
        recordPayment(tx, ledgerContext(request), request.organization.id, {
          type: 'customer_payment',
          contactId: b.contactId,
          date: b.date,
          bankAccountId: b.depositAccountId,
          amountCents: b.amountCents,
          number: b.number,
          memo: b.memo,
          reference: b.reference,
          allocations: b.allocations.map((a, i) => ({
            documentId: a.invoiceId,
            amountCents: a.amountCents,
            field: `allocations[${i}]`,
          })),
          credits: (b.credits ?? []).map((c, i) => ({
            documentId: c.creditMemoId,
            amountCents: c.amountCents,
            field: `credits[${i}]`,
          })),
        }),
      );
      const recorded = bankTransactionIds.length > 0 ? { bankTransactionIds } : {};
      return reply.code(201).send({ data: { ...presentDocument(document), ...recorded } });
    },
  );
};
