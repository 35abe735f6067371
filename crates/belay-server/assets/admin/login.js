// The login form: POST the token in a JSON body (never in a URL); the server
// answers with an HttpOnly cookie that stands for it, then the console loads.
const form = document.getElementById('login-form');
const error = document.getElementById('login-error');
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = document.getElementById('token').value;
  const res = await fetch('/admin/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token }),
    credentials: 'same-origin',
  });
  if (res.status === 204) {
    location.replace('/admin/');
  } else {
    error.textContent = `${res.status}: ${await res.text()}`;
  }
});
