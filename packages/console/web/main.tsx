// The console's entry: sign-in with the admin token (kept in this tab's sessionStorage), then the playground
// and the operator pages, one per hash route (#/keys, …) so the browser's back button and links work.
import '@picocss/pico/css/pico.min.css';
import './styles.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, admin, adminToken } from './api';
import { KeysPage } from './keys';
import { ModelsPage } from './models';
import { PlaygroundPage } from './playground';
import { SessionsPage } from './sessions';
import { ErrorNote } from './ui';
import { WalletsPage } from './wallets';

const PAGES = [
  ['playground', 'Playground'],
  ['keys', 'Keys'],
  ['wallets', 'Wallets'],
  ['models', 'Models'],
  ['sessions', 'Sessions'],
] as const;
type PageName = (typeof PAGES)[number][0];

function route(): { page: PageName; arg: string } {
  const [name = '', arg = ''] = location.hash.replace(/^#\/?/, '').split('/');
  const page = PAGES.find(([p]) => p === name)?.[0] ?? 'playground';
  return { page, arg: decodeURIComponent(arg) };
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [error, setError] = useState<unknown>(null);
  async function submit(e: SubmitEvent) {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    adminToken.set(String(new FormData(form).get('token') ?? ''));
    form.reset();
    try {
      await admin.get('/keys?limit=1');
      onSignedIn();
    } catch (err) {
      adminToken.clear();
      setError(err);
    }
  }
  return (
    <main class="container">
      <h1>s2s console</h1>
      <form onSubmit={submit} aria-label="Sign in">
        <label>
          Admin token
          <input name="token" type="password" autocomplete="off" required autofocus />
          <small>Kept in this tab only (sessionStorage) and sent to the operator API; closing the tab forgets it.</small>
        </label>
        <button type="submit">Sign in</button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(adminToken.get() !== null);
  const [where, setWhere] = useState(route);
  useEffect(() => {
    const onHash = () => setWhere(route());
    addEventListener('hashchange', onHash);
    // A token refused later (rotated, wrong) sends the operator back to sign-in.
    const onRejection = (e: PromiseRejectionEvent) => {
      if (e.reason instanceof ApiError && e.reason.code === 'invalid_admin_token') signOut();
    };
    addEventListener('unhandledrejection', onRejection);
    return () => {
      removeEventListener('hashchange', onHash);
      removeEventListener('unhandledrejection', onRejection);
    };
  }, []);
  useEffect(() => {
    // Keyboard and screen-reader users land on the new page's heading.
    const heading = document.querySelector<HTMLElement>('main h2');
    if (heading) {
      heading.tabIndex = -1;
      heading.focus();
    }
  }, [where.page, signedIn]);

  function signOut() {
    adminToken.clear();
    setSignedIn(false);
  }
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const go = (page: PageName, arg = '') => (location.hash = `#/${page}${arg ? `/${encodeURIComponent(arg)}` : ''}`);
  return (
    <>
      <header class="container">
        <nav aria-label="Console">
          <ul>
            <li>
              <strong>s2s console</strong>
            </li>
          </ul>
          <ul>
            {PAGES.map(([page, title]) => (
              <li key={page}>
                <a href={`#/${page}`} aria-current={where.page === page ? 'page' : undefined}>
                  {title}
                </a>
              </li>
            ))}
            <li>
              <button type="button" class="secondary outline" onClick={signOut}>
                Sign out
              </button>
            </li>
          </ul>
        </nav>
      </header>
      <main class="container">
        {where.page === 'playground' ? <PlaygroundPage /> : null}
        {where.page === 'keys' ? <KeysPage openWallet={(id) => go('wallets', id)} /> : null}
        {where.page === 'wallets' ? <WalletsPage walletId={where.arg} setWalletId={(id) => go('wallets', id)} /> : null}
        {where.page === 'models' ? <ModelsPage /> : null}
        {where.page === 'sessions' ? <SessionsPage /> : null}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
