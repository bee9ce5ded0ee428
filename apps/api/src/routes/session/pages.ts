import type { SessionUser } from '@firm/identity';
import { type Html, html } from '../../html';

export function loginPage(params: {
  csrfToken: string;
  returnTo: string | null;
  email?: string;
  error?: string;
}): Html {
  return html`<h1>Sign in</h1>
    <p class="muted">Sign in with your firm account.</p>
    ${params.error ? html`<p class="error" role="alert">${params.error}</p>` : ''}
    <form method="post" action="/login">
      <input type="hidden" name="csrf_token" value="${params.csrfToken}" />
      ${params.returnTo ? html`<input type="hidden" name="return_to" value="${params.returnTo}" />` : ''}
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required value="${params.email ?? ''}" />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required />
      <button class="primary" type="submit">Sign in</button>
    </form>`;
}

export function signedInPage(user: SessionUser, csrfToken: string): Html {
  return html`<h1>Signed in</h1>
    <p>You are signed in as <strong>${user.name}</strong> (${user.email}, ${user.role}).</p>
    <p><a href="/approvals">Agent proposals waiting for approval</a></p>
    <form method="post" action="/logout">
      <input type="hidden" name="csrf_token" value="${csrfToken}" />
      <button type="submit">Sign out</button>
    </form>`;
}

export function invitationPage(params: {
  token: string;
  csrfToken: string;
  email: string;
  name: string;
  firmName: string;
  error?: string;
}): Html {
  return html`<h1>Join ${params.firmName}</h1>
    <p>You were invited as <strong>${params.name}</strong> (${params.email}). Choose a password to sign in.</p>
    ${params.error ? html`<p class="error" role="alert">${params.error}</p>` : ''}
    <form method="post" action="/invite/${params.token}">
      <input type="hidden" name="csrf_token" value="${params.csrfToken}" />
      <input type="hidden" name="email" value="${params.email}" autocomplete="username" />
      <label for="password">Password (at least 12 characters)</label>
      <input id="password" name="password" type="password" autocomplete="new-password" minlength="12" required />
      <label for="password_confirmation">The same password again</label>
      <input
        id="password_confirmation"
        name="password_confirmation"
        type="password"
        autocomplete="new-password"
        minlength="12"
        required
      />
      <button class="primary" type="submit">Set password and sign in</button>
    </form>`;
}
