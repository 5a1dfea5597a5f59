/* errorkb page behaviour. Loaded with the CSP nonce; no eval, no inline handlers.
   - paste page: Ctrl/Cmd+Enter matches now; a file (chosen, dropped, or a paste too large
     for the text field) is read into the textarea when small, else sent as a log upload;
   - copy buttons on code blocks;
   - "/" focuses the paste box from any page, a live region announces a result's count,
     "Copy link" shares a result through the URL fragment (the "answers" section below);
   - htmx errors: 400, 413 and 429 carry a friendly fragment and swap (templates/kb/_htmx_head.html);
     other error statuses (403, 404, 5xx) do not, so show a plain message in the request's
     target instead of failing silently (docs/reliability.md#r28-friendly-failure). */
(function () {
  "use strict";

  function byteLength(text) {
    return new Blob([text]).size;
  }

  function formatBytes(n) {
    if (n >= 1048576) return (n / 1048576).toFixed(1) + " MB";
    if (n >= 1024) return Math.round(n / 1024) + " KB";
    return n + " bytes";
  }

  function showNote(text) {
    var note = document.getElementById("paste-note");
    if (!note) return;
    note.textContent = text;
    note.hidden = !text;
  }

  function submitPaste(form) {
    if (window.htmx) {
      window.htmx.trigger(form, "kb:submit");
    } else {
      form.requestSubmit();
    }
  }

  function setupPaste() {
    var form = document.getElementById("paste-form");
    if (!form) return;
    var textarea = document.getElementById("paste-text");
    var fileInput = document.getElementById("log-file");
    var zone = document.getElementById("drop-zone");
    var maxPaste = parseInt(form.dataset.maxPaste, 10) || 262144;
    var maxLog = parseInt(form.dataset.maxLog, 10) || 67108864;

    // The text field's maxlength would silently cut a long paste: send those as a log.
    textarea.removeAttribute("maxlength");

    function useFile(file) {
      if (!file) return;
      if (file.size > maxLog) {
        fileInput.value = "";
        showNote(file.name + " is " + formatBytes(file.size) + "; the limit is " +
          formatBytes(maxLog) + ". Upload the part of the log around the error.");
        return;
      }
      if (file.size <= maxPaste) {
        file.text().then(function (text) {
          fileInput.value = "";
          textarea.value = text;
          showNote("Loaded " + file.name + " (" + formatBytes(file.size) + ").");
          submitPaste(form);
        }, function () {
          showNote("Could not read " + file.name + ".");
        });
        return;
      }
      var dt = new DataTransfer();
      dt.items.add(file);
      fileInput.files = dt.files;
      textarea.value = "";
      showNote("Matching " + file.name + " (" + formatBytes(file.size) + ") as a log file.");
      submitPaste(form);
    }

    textarea.addEventListener("keydown", function (e) {
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        submitPaste(form);
      }
    });
    textarea.addEventListener("input", function () {
      if (fileInput.value) {
        fileInput.value = "";
        showNote("");
      }
    });
    textarea.addEventListener("paste", function (e) {
      var text = e.clipboardData && e.clipboardData.getData("text/plain");
      if (text && byteLength(textarea.value) + byteLength(text) > maxPaste) {
        e.preventDefault();
        useFile(new File([textarea.value + text], "pasted text", { type: "text/plain" }));
      }
    });
    fileInput.addEventListener("change", function () {
      useFile(fileInput.files && fileInput.files[0]);
    });
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (e) {
        if (e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types, "Files") >= 0) {
          e.preventDefault();
          zone.classList.add("dragging");
        }
      });
    });
    ["dragleave", "dragend"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("dragging"); });
    });
    zone.addEventListener("drop", function (e) {
      zone.classList.remove("dragging");
      if (e.dataTransfer && e.dataTransfer.files && e.dataTransfer.files.length) {
        e.preventDefault();
        useFile(e.dataTransfer.files[0]);
      }
    });
  }

  function setupCopyButtons(root) {
    var buttons = (root || document).querySelectorAll("button.copy-btn[data-copy-target]");
    Array.prototype.forEach.call(buttons, function (button) {
      if (!navigator.clipboard) return;  // insecure context: leave the button hidden
      button.hidden = false;
    });
  }

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button.copy-btn[data-copy-target]");
    if (!button) return;
    var target = document.getElementById(button.dataset.copyTarget);
    if (!target) return;
    var code = target.querySelector("code") || target;
    // Line numbers are aria-hidden spans: copy only the code.
    var clone = code.cloneNode(true);
    Array.prototype.forEach.call(clone.querySelectorAll(".ln, .visually-hidden"), function (n) {
      n.remove();
    });
    navigator.clipboard.writeText(clone.textContent).then(function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    }, function () {
      button.textContent = "Copy failed";
    });
  });

  function errorMessage(status) {
    if (status === 0) return "Could not reach the server. Check your connection and try again.";
    if (status === 403) return "Your session expired. Reload the page and try again.";
    if (status === 404) return "Not found. Reload the page.";
    return "Something went wrong on our side. Please try again in a moment.";
  }

  function showRequestError(e, status) {
    var target = (e.detail && e.detail.target) || document.getElementById("results");
    if (!target) return;
    var box = document.createElement("div");
    box.className = "notice notice-error";
    box.setAttribute("role", "alert");
    var p = document.createElement("p");
    p.textContent = errorMessage(status);
    box.appendChild(p);
    target.replaceChildren(box);
  }

  document.addEventListener("htmx:responseError", function (e) {
    var xhr = e.detail && e.detail.xhr;
    showRequestError(e, xhr ? xhr.status : 500);
  });
  document.addEventListener("htmx:sendError", function (e) { showRequestError(e, 0); });
  document.addEventListener("htmx:load", function (e) { setupCopyButtons(e.target); });

  /* --- answers: "/" shortcut, live region, share through the URL fragment ------------
     A shared link is the paste page's URL with the paste after "#paste=": deflate-raw
     (CompressionStream), then base64url. Browsers never send the fragment to a server, so
     the paste reaches it only as the POST it always was, and is not stored anywhere: not
     in the server's logs, not in a referrer. The fragment is capped at MAX_SHARE_CHARS
     characters so the whole link stays inside what browsers, chat tools and ticket
     systems carry intact; past it the button says so and makes no link, because a cut
     link would silently share a different paste. */
  var SHARE_PREFIX = "#paste=";
  var MAX_SHARE_CHARS = 6000;

  function toBase64Url(bytes) {
    var binary = "";
    for (var i = 0; i < bytes.length; i += 0x8000) {
      binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    }
    return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  function fromBase64Url(text) {
    var binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
    var bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  function deflate(text) {
    var stream = new Blob([text]).stream().pipeThrough(new CompressionStream("deflate-raw"));
    return new Response(stream).arrayBuffer().then(function (b) { return new Uint8Array(b); });
  }

  function inflate(bytes) {
    // deflate expands at most about a thousandfold: a link this short stays small in memory
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return new Response(stream).text();
  }

  function canShare() {
    return typeof CompressionStream === "function" && typeof DecompressionStream === "function";
  }

  function setupShare(root) {
    root = root || document;
    // htmx:load fires on each top-level element of a swap: the box itself may be the root
    var boxes = Array.prototype.slice.call(root.querySelectorAll("[data-share]"));
    if (root.matches && root.matches("[data-share]")) boxes.push(root);
    boxes.forEach(function (box) {
      if (!canShare()) return;  // the no-JS sentence stays: it is true for this browser too
      var note = box.querySelector(".share-nojs");
      var button = box.querySelector(".share-btn");
      if (note) note.hidden = true;
      if (button) button.hidden = false;
    });
  }

  function shareStatus(box, text) {
    var status = box.querySelector(".share-status");
    if (status) status.textContent = text;
  }

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("[data-share] .share-btn");
    if (!button) return;
    var box = button.closest("[data-share]");
    var textarea = document.getElementById("paste-text");
    var text = textarea ? textarea.value : "";
    var field = box.querySelector(".share-url");
    if (!text.trim()) {
      shareStatus(box, "Only pasted text can be shared as a link; an uploaded file is not kept in the page.");
      return;
    }
    deflate(text).then(function (bytes) {
      var fragment = toBase64Url(bytes);
      if (fragment.length > MAX_SHARE_CHARS) {
        field.hidden = true;
        shareStatus(box, "This paste is too long to share as a link (" +
          fragment.length.toLocaleString("en") + " characters compressed; links carry up to " +
          MAX_SHARE_CHARS.toLocaleString("en") + "). Share the lines around the error instead.");
        return;
      }
      var url = new URL(box.dataset.pasteUrl || "/", location.href);
      url.hash = SHARE_PREFIX.slice(1) + fragment;
      field.value = url.href;
      field.hidden = false;
      var copied = navigator.clipboard ? navigator.clipboard.writeText(url.href) : Promise.reject();
      copied.then(function () {
        shareStatus(box, "Link copied. It holds your paste, so share it only where the paste may go.");
      }, function () {
        shareStatus(box, "Copy the link below. It holds your paste, so share it only where the paste may go.");
        field.select();
      });
    }, function () {
      shareStatus(box, "Could not make a link in this browser.");
    });
  });

  function openSharedPaste() {
    var form = document.getElementById("paste-form");
    var textarea = document.getElementById("paste-text");
    if (!form || !textarea || location.hash.indexOf(SHARE_PREFIX) !== 0) return;
    var fragment = location.hash.slice(SHARE_PREFIX.length);
    var maxPaste = parseInt(form.dataset.maxPaste, 10) || 262144;
    var broken = "This link's paste could not be read: it may have been cut off when it was copied.";
    if (!canShare() || fragment.length > MAX_SHARE_CHARS) {
      showNote(canShare() ? broken : "Opening a shared link needs a browser with CompressionStream.");
      return;
    }
    var bytes;
    try {
      bytes = fromBase64Url(fragment);
    } catch (err) {
      showNote(broken);
      return;
    }
    inflate(bytes).then(function (text) {
      if (byteLength(text) > maxPaste) {
        showNote("This link's paste is larger than " + formatBytes(maxPaste) + " and was not matched.");
        return;
      }
      textarea.value = text;
      showNote("Opened a shared paste: matched here, as if you had pasted it.");
      submitPaste(form);
    }, function () {
      showNote(broken);
    });
  }

  function setupSlashKey() {
    document.addEventListener("keydown", function (e) {
      if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || e.defaultPrevented) return;
      var t = e.target;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      e.preventDefault();
      var box = document.getElementById("paste-text");
      if (box) {
        box.focus();
        return;
      }
      var home = document.querySelector("a.brand[href]");
      if (home) location.href = home.href;  // the paste page focuses its box on load
    });
  }

  function announceResult(e) {
    var target = e.detail && e.detail.target;
    var live = document.getElementById("live-status");
    if (!live || !target || target.id !== "results") return;
    var count = target.querySelector("#results-count");
    live.textContent = "";
    if (!count) return;
    // set after a tick: the same sentence twice in a row is announced again
    setTimeout(function () { live.textContent = count.dataset.announce || ""; }, 50);
  }

  document.addEventListener("htmx:afterSettle", announceResult);
  document.addEventListener("htmx:load", function (e) { setupShare(e.target); });
  /* --- end of answers ------------------------------------------------------------ */

  function init() {
    setupPaste();
    setupCopyButtons(document);
    setupShare(document);
    setupSlashKey();
    openSharedPaste();
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
