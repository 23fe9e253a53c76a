// The report page's script: draws each canvas.heatmap from the JSON beside it and shows a cell's
// values on hover. Marks the page as drawn (data-drawn: how many) or failed (data-errors), for a
// headless browser to check. Embedded in the page at build time (src/analysis/page_assets.h).
(function () {
  var root = document.documentElement, errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message));
    root.setAttribute('data-errors', errors.join('; '));
  });
  var tip = document.createElement('div');
  tip.className = 'tip';
  document.body.appendChild(tip);
  function show(text, x, y) {
    tip.textContent = text;
    tip.style.left = (x + 14) + 'px';
    tip.style.top = (y + 14) + 'px';
    tip.style.display = 'block';
  }
  function hide() { tip.style.display = 'none'; }
  var stops = {
    seq: [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]],
    excess: [[255, 247, 236], [253, 212, 158], [252, 141, 89], [215, 48, 31], [127, 0, 0]]
  };
  function colour(kind, t) {
    var s = stops[kind];
    t = Math.max(0, Math.min(1, t)) * (s.length - 1);
    var i = Math.min(Math.floor(t), s.length - 2), f = t - i, a = s[i], b = s[i + 1];
    return 'rgb(' + [0, 1, 2].map(function (k) {
      return Math.round(a[k] + (b[k] - a[k]) * f);
    }).join(',') + ')';
  }
  function fmt(v) {
    var a = Math.abs(v);
    return a >= 100 || a === 0 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toPrecision(3);
  }
  function draw(canvas) {
    var d = JSON.parse(document.getElementById(canvas.id + '-data').textContent);
    var R = d.rows.length, C = d.cols.length, L = 110, T = 34;
    var W = canvas.width - L - 20, rh = d.rowpx, cw = W / C, H = R * rh, span = (d.hi - d.lo) || 1;
    var g = canvas.getContext('2d');
    g.fillStyle = '#fcfcfc';
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.fillStyle = '#222';
    g.font = 'bold 15px sans-serif';
    g.fillText(d.title, 10, 20);
    for (var r = 0; r < R; r++) {
      for (var c = 0; c < C; c++) {
        var v = d.v[r * C + c];
        g.fillStyle = v === null ? '#e8e8e8' : colour(d.kind, (v - d.lo) / span);
        g.fillRect(L + c * cw, T + r * rh, Math.ceil(cw), Math.ceil(rh));
      }
    }
    g.fillStyle = '#444';
    g.font = '11px sans-serif';
    g.textAlign = 'right';
    var every = Math.max(1, Math.ceil(14 / rh));
    for (r = 0; r < R; r += every) g.fillText(d.rows[r], L - 6, T + r * rh + Math.min(rh, 14) / 2 + 4);
    g.textAlign = 'center';
    var ce = Math.max(1, Math.ceil(C * 80 / W));
    for (c = 0; c < C; c += ce) g.fillText(d.cols[c], L + (c + 0.5) * cw, T + H + 14);
    g.textAlign = 'right';
    g.fillText('steps', L + W, T + H + 28);
    var lx = L, ly = T + H + 38, lw = 300;
    for (var i = 0; i < lw; i++) {
      g.fillStyle = colour(d.kind, i / (lw - 1));
      g.fillRect(lx + i, ly, 1, 10);
    }
    g.fillStyle = '#444';
    g.textAlign = 'left';
    g.fillText(fmt(d.lo) + ' ' + d.unit, lx, ly + 23);
    g.textAlign = 'right';
    g.fillText(fmt(d.hi) + ' ' + d.unit, lx + lw, ly + 23);
    if (d.mark !== undefined) {
      var mx = lx + lw * (d.mark - d.lo) / span;
      g.fillStyle = '#000';
      g.fillRect(mx, ly - 3, 1, 16);
      g.textAlign = 'left';
      g.fillText(d.markLabel + ' (' + fmt(d.mark) + ' ' + d.unit + ')', lx + lw + 12, ly + 9);
    }
    canvas.addEventListener('mousemove', function (e) {
      var b = canvas.getBoundingClientRect();
      var x = (e.clientX - b.left) * canvas.width / b.width;
      var y = (e.clientY - b.top) * canvas.height / b.height;
      var c = Math.floor((x - L) / cw), r = Math.floor((y - T) / rh);
      if (c < 0 || r < 0 || c >= C || r >= R) { hide(); return; }
      var v = d.v[r * C + c], text = d.rows[r] + ', steps ' + d.cols[c] + ': ';
      if (v === null) text += 'no window';
      else text += fmt(v) + ' ' + d.unit + (d.banded ? ' at most (rank ' + d.who[r * C + c] + ')' : '');
      show(text, e.pageX, e.pageY);
    });
    canvas.addEventListener('mouseleave', hide);
  }
  var drawn = 0;
  document.querySelectorAll('canvas.heatmap').forEach(function (c) { draw(c); drawn++; });
  root.setAttribute('data-drawn', String(drawn));
})();
