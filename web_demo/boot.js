// Starts the page: a classic script, so that it runs from file:// too (where Chromium blocks module scripts) and
// the page needs no inline script (its origin may then forbid them: the Android app's Content-Security-Policy does).
// Opened as a file, Chromium blocks the page's module script and every fetch of its bundles (origin
// "null"): say how to serve it instead of staying at "starting …", and load nothing.
if (location.protocol === 'file:') {
  const folder = decodeURIComponent(location.pathname.replace(/[^/]*$/, ''));
  const status = document.getElementById('status');
  const error = document.getElementById('error');
  status.textContent = 'not started: this page was opened as a file';
  error.textContent = 'The page cannot run from a file:// address: the browser blocks its script and model '
    + 'downloads there. Fix: serve its folder and open it on localhost: python3 -m http.server -d '
    + `'${folder.replace(/'/g, "'\\''")}' 8000 --bind 127.0.0.1, then open http://localhost:8000/`;
  error.hidden = false;
} else {
  const app = document.createElement('script');
  app.type = 'module';
  app.src = 'app.js';
  document.body.append(app);
}
