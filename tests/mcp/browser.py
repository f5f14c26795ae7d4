"""Plays the person's browser for `codemode auth login`, for the tests and the
conformance adapter: reads the link codemode prints, opens it without following the
authorization server's redirect, then follows that redirect to codemode's loopback
listener, as a browser does once the person allows the request."""

import subprocess
import threading
import urllib.error
import urllib.request


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def browse(link):
    """Opens the authorization link, then goes where the authorization server sends it."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        response = opener.open(link, timeout=20)
        location = response.headers.get("Location")
    except urllib.error.HTTPError as e:
        location = e.headers.get("Location")
    if not location:
        raise RuntimeError(f"the authorization server did not redirect: {link}")
    with urllib.request.urlopen(location, timeout=20) as back:
        back.read()


def login(codemode, config, plugin, env, wait=25):
    """Runs `codemode auth login PLUGIN`, answering in the browser's place; returns
    (exit code, standard output, standard error)."""
    process = subprocess.Popen(
        [codemode, "auth", "login", plugin, "--config", config, "--wait", str(wait)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    errors = []

    def watch():
        for line in process.stderr:
            errors.append(line)
            if line.startswith(("http://", "https://")):
                try:
                    browse(line.strip())
                except Exception as e:  # the login then times out, and says so
                    errors.append(f"(browser) {e}\n")

    watcher = threading.Thread(target=watch)
    watcher.start()
    process.wait(timeout=wait + 30)
    watcher.join()
    return process.returncode, process.stdout.read(), "".join(errors)
