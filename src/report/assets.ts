/**
 * The report's stylesheet and its plain-JavaScript behaviour (no framework, no network): sort by
 * a column, filter rows by text, and show an example's trace. The trace view builds DOM nodes and
 * sets `textContent` only, so nothing from a trace is ever parsed as HTML.
 */
export const REPORT_CSS = `
:root{--fg:#222;--muted:#666;--line:#ddd;--bg2:#f6f7f9;--ok:#1b9e77;--bad:#d95f02}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"DejaVu Sans",sans-serif;color:var(--fg);margin:0;padding:24px 32px;line-height:1.45}
h1{margin:0 0 4px}h2{margin-top:36px;border-bottom:1px solid var(--line);padding-bottom:4px}
.meta{color:var(--muted);margin-bottom:16px}.meta span{margin-right:18px}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid var(--line);padding:4px 8px;vertical-align:top;text-align:left}
th{background:var(--bg2)}
table.examples thead th{position:sticky;top:0;z-index:1}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
table.examples{width:100%}
table.examples th{cursor:pointer;user-select:none}
table.examples th.sorted-asc::after{content:" ▲"}table.examples th.sorted-desc::after{content:" ▼"}
table.examples td.text{max-width:420px;white-space:pre-wrap;word-break:break-word}
tr.error td{background:#fff3ef}
.controls{margin:8px 0;display:flex;gap:12px;align-items:center}
.controls input[type=search]{width:320px;padding:4px 6px}
pre{background:var(--bg2);padding:8px;overflow:auto;max-height:480px;white-space:pre-wrap;word-break:break-word;font-size:12px}
.skipped{color:var(--muted);font-size:90%}
.caption{color:var(--muted);font-size:90%;margin-top:0}
.trace-view{padding:6px 0}.trace-view h4{margin:10px 0 4px}
.trace-view details{margin:4px 0 4px 8px}.trace-view summary{cursor:pointer}
.role{font-weight:bold;color:#555}
button.trace-btn{font-size:12px}
.note{color:var(--muted);font-size:90%}
.hit{color:var(--ok);font-weight:bold}.miss{color:var(--bad)}
table.examples td.answer{max-width:360px;white-space:pre-wrap;word-break:break-word}
td.pos{color:var(--ok)}td.neg{color:var(--bad)}
.answer .scores{display:block;color:var(--muted);font-size:90%;margin-top:4px}
`;

export const REPORT_JS = `
(function(){
  'use strict';
  function el(tag, text, cls){var e=document.createElement(tag);if(text!==undefined&&text!==null)e.textContent=String(text);if(cls)e.className=cls;return e;}
  var tracesEl=document.getElementById('ambiqa-traces');
  var traces=tracesEl?JSON.parse(tracesEl.textContent||'{}'):{};
  function section(parent,title){var h=el('h4',title);parent.appendChild(h);}
  function renderTrace(t){
    var root=el('div',null,'trace-view');
    if(!t){root.appendChild(el('p','No trace recorded for this example (or traces were left out of the report).','note'));return root;}
    var s=t.summary||{};
    root.appendChild(el('p',t.pipeline+' · '+(t.llm?t.llm.provider+'/'+t.llm.model:'')+' · '+s.llmCalls+' LLM calls, '+(s.promptTokens!==undefined?s.promptTokens:'?')+' prompt + '+(s.completionTokens!==undefined?s.completionTokens:'?')+' completion tokens, '+s.cacheHits+' cache hits, '+(s.seconds!==undefined?Number(s.seconds).toFixed(2):'?')+' s'));
    section(root,'Method decisions');root.appendChild(el('pre',JSON.stringify(t.decisions,null,2)));
    if(t.parseFailures&&t.parseFailures.length){section(root,'Parse failures');root.appendChild(el('pre',JSON.stringify(t.parseFailures,null,2)));}
    if(t.retrievals&&t.retrievals.length){
      section(root,'Retrievals ('+t.retrievals.length+')');
      t.retrievals.forEach(function(r){var d=el('details');d.appendChild(el('summary','#'+r.index+' '+r.purpose+' · '+r.retriever+(r.reranker?' + '+r.reranker:'')+' · k='+r.k+' · '+r.query));
        d.appendChild(el('pre',(r.hits||[]).map(function(h){return h.id+'\\t'+Number(h.score).toFixed(4);}).join('\\n')));root.appendChild(d);});
    }
    if(t.llmCalls&&t.llmCalls.length){
      section(root,'LLM calls ('+t.llmCalls.length+')');
      t.llmCalls.forEach(function(c){var d=el('details');
        var toks=(c.completions||[]).reduce(function(a,x){return x.promptTokens===undefined||x.completionTokens===undefined?'?':a==='?'?a:a+x.promptTokens+x.completionTokens;},0);
        var hits=(c.completions||[]).filter(function(x){return x.cacheHit;}).length;
        d.appendChild(el('summary','#'+c.index+' '+c.purpose+' · T='+(c.params?c.params.temperature:'?')+' · n='+(c.completions||[]).length+' · '+toks+' tokens'+(hits?' · '+hits+' cached':'')+' · '+Number(c.wallSeconds||0).toFixed(2)+' s'));
        (c.messages||[]).forEach(function(m){var p=el('pre');p.appendChild(el('span',m.role+': ','role'));p.appendChild(document.createTextNode(m.content));d.appendChild(p);});
        (c.completions||[]).forEach(function(x,i){var p=el('pre');p.appendChild(el('span','completion '+i+' ('+x.finishReason+'): ','role'));p.appendChild(document.createTextNode(x.text));d.appendChild(p);});
        root.appendChild(d);});
    }
    return root;
  }
  function closeDetail(row){var next=row.nextElementSibling;if(next&&next.classList.contains('detail')){next.parentNode.removeChild(next);return true;}return false;}
  function toggle(row,btn){
    // A row may hold several traces (a comparison: one per run); another run's button switches.
    var key=(btn&&btn.getAttribute('data-trace'))||'';
    if(closeDetail(row)&&row.getAttribute('data-open')===key)return;
    row.setAttribute('data-open',key);
    var id=(btn&&btn.getAttribute('data-trace'))||row.getAttribute('data-id');var tr=document.createElement('tr');tr.className='detail';
    var td=document.createElement('td');td.colSpan=row.children.length;td.appendChild(renderTrace(traces[id]));tr.appendChild(td);
    row.parentNode.insertBefore(tr,row.nextSibling);
  }
  document.querySelectorAll('table.examples').forEach(function(table){
    var tbody=table.tBodies[0];
    var rows=function(){return Array.prototype.filter.call(tbody.rows,function(r){return !r.classList.contains('detail');});};
    table.addEventListener('click',function(ev){var b=ev.target.closest&&ev.target.closest('button.trace-btn');if(b){toggle(b.closest('tr'),b);}});
    Array.prototype.forEach.call(table.tHead.rows[0].cells,function(th,col){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('sorted-asc');
        Array.prototype.forEach.call(th.parentNode.cells,function(c){c.classList.remove('sorted-asc','sorted-desc');});
        th.classList.add(asc?'sorted-asc':'sorted-desc');
        tbody.querySelectorAll('tr.detail').forEach(function(d){d.parentNode.removeChild(d);});
        var numeric=th.classList.contains('num');
        var key=function(r){var c=r.cells[col];var v=c.getAttribute('data-v');if(numeric){var x=parseFloat(v!==null?v:c.textContent);return isNaN(x)?-Infinity:x;}return (v!==null?v:c.textContent).toLowerCase();};
        var sorted=rows().sort(function(a,b){var x=key(a),y=key(b);return (x<y?-1:x>y?1:0)*(asc?1:-1);});
        sorted.forEach(function(r){tbody.appendChild(r);});
      });
    });
    var box=table.parentNode.querySelector('input[type=search]');var count=table.parentNode.querySelector('.count');
    var errorsOnly=table.parentNode.querySelector('input.errors-only');var changedOnly=table.parentNode.querySelector('input.changed-only');
    function filter(){var q=(box&&box.value||'').toLowerCase();var shown=0;var err=errorsOnly&&errorsOnly.checked;var ch=changedOnly&&changedOnly.checked;
      rows().forEach(function(r){var ok=(!q||r.textContent.toLowerCase().indexOf(q)>=0)&&(!err||r.classList.contains('error'))&&(!ch||r.classList.contains('changed'));r.style.display=ok?'':'none';closeDetail(r);if(ok)shown++;});
      if(count)count.textContent=shown+' of '+rows().length+' examples';}
    if(box)box.addEventListener('input',filter);if(errorsOnly)errorsOnly.addEventListener('change',filter);if(changedOnly)changedOnly.addEventListener('change',filter);filter();
  });
  if(location.hash&&location.hash.indexOf('#ex-')===0){var r=document.getElementById(decodeURIComponent(location.hash.slice(1)));if(r&&r.querySelector('button.trace-btn')){toggle(r);r.scrollIntoView();}}
})();
`;
