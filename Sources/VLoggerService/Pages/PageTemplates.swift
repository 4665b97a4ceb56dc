import Foundation
import Mustache
import VLoggerModel

/// The pages' templates (swift-mustache: `{{x}}` is HTML-escaped, `{{{x}}}` is not and is used only for the SVG
/// charts the service draws itself). The shipped ones are below; a file `NAME.mustache` in `[service] templates`
/// replaces the shipped `NAME` (docs/pages.md lists what each template is given).
public struct PageTemplates: Sendable {
    let library: MustacheLibrary
    /// The templates the pages use: the layout (head, styles, header, live updates) and one per page.
    public static let names = ["layout", "status", "tag", "audit"]

    /// The shipped templates, with those of `folder` in their place. An unknown name or a template that does not
    /// parse is an error naming the file.
    public init(folder: String? = nil) throws(VLoggerError) {
        var library = MustacheLibrary()
        for (name, text) in Self.shipped {
            do { try library.register(text, named: name) } catch {
                throw VLoggerError("the shipped template \(name) does not parse: \(error)")
            }
        }
        if let folder {
            let files: [String]
            do { files = try FileManager.default.contentsOfDirectory(atPath: folder) } catch {
                throw VLoggerError(
                    "[service] templates \(folder): cannot read the folder (\(error.localizedDescription))")
            }
            for file in files.sorted() where file.hasSuffix(".mustache") {
                let name = String(file.dropLast(".mustache".count))
                let path = (folder as NSString).appendingPathComponent(file)
                guard Self.names.contains(name) else {
                    throw VLoggerError(
                        "\(path): no page uses a template named \(name); the templates are \(Self.names.joined(separator: ", "))"
                    )
                }
                let text: String
                do { text = try String(contentsOfFile: path, encoding: .utf8) } catch {
                    throw VLoggerError("\(path): cannot read it (\(error.localizedDescription))")
                }
                do { try library.register(text, named: name) } catch {
                    throw VLoggerError("\(path)\(Self.place(error)): not a Mustache template: \(Self.reason(error))")
                }
            }
        }
        self.library = library
    }

    /// `:LINE:COLUMN` of a parser error, as editors read it.
    static func place(_ error: Error) -> String {
        guard let e = error as? MustacheTemplate.ParserError else { return "" }
        return ":\(e.context.lineNumber):\(e.context.columnNumber)"
    }

    /// What the parser found wrong ("expectedSectionEnd").
    static func reason(_ error: Error) -> String {
        guard let e = error as? MustacheTemplate.ParserError else { return "\(error)" }
        return "\(e.error)".components(separatedBy: ".").last ?? "\(e.error)"
    }

    /// The page `name` rendered with `view`.
    public func render(_ view: Any, _ name: String) -> String {
        library.render(view, withTemplate: name) ?? "<!doctype html><p>no template \(name)</p>"
    }

    static let shipped: [(String, String)] = [
        ("layout", layout), ("status", status), ("tag", tag), ("audit", audit),
    ]

    /// Every page: the viewport for phones, styles that fit 400 px (tables become cards), the header with the plant's
    /// state apart from the software's, and live updates from the read API's stream (each change fetches the page
    /// again and swaps its content: the scroll position stays).
    static let layout = #"""
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{$title}}vlogger{{/title}}</title>
        <style>
        *{box-sizing:border-box}
        body{font:15px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d1d1d;background:#fff}
        header{padding:.6em 1em;background:#f3f4f6;border-bottom:1px solid #d8dbe0}
        main{padding:0 1em 1.5em;max-width:76em}
        h1{font-size:1.25em;margin:.1em 0 .3em}h2{font-size:1.05em;margin:1.3em 0 .4em}
        p{margin:.3em 0}a{color:#0b57a4}
        .sub{color:#555;font-size:.85em}
        .state{display:flex;flex-wrap:wrap;gap:.4em;margin:.2em 0}
        .badge{display:inline-block;padding:.1em .6em;border-radius:1em;font-size:.85em;border:1px solid;background:#fff}
        .ok{color:#1d6b1d;border-color:#1d6b1d}.bad{color:#b00020;border-color:#b00020}.warn{color:#8a5a00;border-color:#8a5a00}
        table{border-collapse:collapse;width:100%;margin-bottom:.6em}
        th,td{border-bottom:1px solid #e3e5e8;padding:.3em .45em;text-align:left;vertical-align:top;font-size:.9em;overflow-wrap:anywhere}
        th{background:#f7f8f9;font-weight:600;overflow-wrap:normal}
        tr.alarm td{background:#fdecee}tr.alarm td:first-child{border-left:4px solid #b00020}
        .uid,code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.88em;white-space:nowrap}
        .hot{color:#b00020;font-weight:700}.acked{font-weight:400;font-size:.9em}.counts td{font-size:1.3em}
        .v{white-space:nowrap}.num{font-variant-numeric:tabular-nums}
        .chart svg{width:100%;height:auto;max-width:760px;display:block}
        form.pick{display:flex;flex-wrap:wrap;gap:.5em;align-items:center;margin:.3em 0}
        select,button{font:inherit;padding:.15em .3em}
        .none{color:#666}
        .sign{margin-top:2.5em;display:grid;grid-template-columns:repeat(auto-fit,minmax(12em,1fr));gap:1.5em}
        .sign div{border-top:1px solid #333;padding-top:.2em;font-size:.85em}
        @media (max-width:640px){
          table.cards,table.cards tbody,table.cards tr,table.cards td{display:block;width:100%}
          table.cards tr:first-child{display:none}
          table.cards tr{border:1px solid #e3e5e8;border-radius:6px;margin:.4em 0;padding:.2em .4em}
          table.cards td{border:0;padding:.1em 0}
          table.cards td::before{content:attr(data-label) ": ";font-weight:600;color:#555}
          .uid,code{white-space:normal;overflow-wrap:anywhere}
          tr.alarm{border-left:4px solid #b00020!important}tr.alarm td:first-child{border-left:0}
        }
        @page{size:A4;margin:15mm}
        @media print{header{background:none;border:0}main{padding:0}a{color:inherit;text-decoration:none}.noprint{display:none}}
        #contact{background:#3a3a3a;color:#fff;padding:.5em 1em;font-weight:600}
        body.stale #live{filter:grayscale(1);opacity:.55}
        .age{color:#555}
        </style></head><body>
        <div id="contact" class="noprint" role="alert" hidden></div>
        <div id="live">
        {{$header}}{{/header}}
        <main>{{$main}}{{/main}}</main>
        </div>
        {{#live}}<noscript><meta http-equiv="refresh" content="30"></noscript>
        <script>
        (function(){
          // The page keeps itself current: the stream says when something was stored, the page is fetched again and
          // its content swapped (the scroll position stays); every 10 s it is fetched anyway. A fetch that fails or
          // hangs (8 s), or a stream that breaks, turns the page grey under "No contact with the gateway since …"
          // (the gateway's time of the last page that came); the values' ages keep counting meanwhile.
          var busy=false,again=false,last=Date.now(),skew=0,offset=0;
          function two(n){return(n<10?"0":"")+n}
          function sync(){var h=document.querySelector("header[data-now]");if(h){skew=(+h.getAttribute("data-now"))-Date.now();offset=+h.getAttribute("data-offset")}}
          function clock(ms){var d=new Date(ms+offset*60000);return two(d.getUTCHours())+":"+two(d.getUTCMinutes())+":"+two(d.getUTCSeconds())}
          function age(ms){ms=Math.max(0,ms);var m=Math.floor(ms/60000);if(m<1)return Math.floor(ms/1000)+" s";if(m<60)return m+" min";if(m<1440)return Math.floor(m/60)+" h"+(m%60>0?" "+(m%60)+" min":"");return Math.floor(m/1440)+" d"+(Math.floor(m%1440/60)>0?" "+Math.floor(m%1440/60)+" h":"")}
          function ages(){var n=document.querySelectorAll("[data-ms]");for(var i=0;i<n.length;i++){n[i].textContent=age(Date.now()+skew-(+n[i].getAttribute("data-ms")))}}
          function lost(){if(document.body.classList.contains("stale"))return;document.body.classList.add("stale");var c=document.getElementById("contact");c.textContent="No contact with the gateway since "+clock(last+skew)+": what is shown is from then";c.hidden=false}
          function ok(){last=Date.now();document.body.classList.remove("stale");document.getElementById("contact").hidden=true}
          function refresh(){
            if(busy){again=true;return}busy=true;
            var ctl=window.AbortController?new AbortController():null,t=setTimeout(function(){if(ctl)ctl.abort()},8000);
            fetch(location.href,{cache:"no-store",signal:ctl?ctl.signal:undefined}).then(function(r){if(!r.ok)throw new Error(r.status);return r.text()}).then(function(t){
              var d=new DOMParser().parseFromString(t,"text/html"),n=d.getElementById("live");
              if(n)document.getElementById("live").replaceWith(n);
              ok();sync();ages();
            }).catch(lost).then(function(){clearTimeout(t);busy=false;if(again){again=false;setTimeout(refresh,1000)}});
          }
          var timer=null;function soon(){if(!timer)timer=setTimeout(function(){timer=null;refresh()},1000)}
          sync();ages();
          if(window.EventSource){
            var es=new EventSource("/api/v1/stream");
            es.addEventListener("reading",soon);es.addEventListener("event",soon);
            es.onerror=function(){refresh()};
          }
          setInterval(refresh,10000);setInterval(ages,1000);
        })();
        </script>{{/live}}
        </body></html>
        """#

    static let header = #"""
        {{#head}}<header data-now="{{nowMs}}" data-offset="{{offsetMinutes}}">
        <h1>{{gateway}}{{#site}} — {{site}}{{/site}}</h1>
        <div class="state">
        <span class="badge {{plantState}}">plant: {{plant}}</span>
        <span class="badge {{softwareState}}">software: {{software}}</span>
        </div>
        <p class="sub">{{now}} ({{zone}}) · <a href="/">status</a> · <a href="/metrics">metrics</a> · <a href="/healthz">health</a></p>
        </header>{{/head}}
        """#

    /// The status page: the plant's alarms first, then the readers, the tags in each field with their values, the
    /// outputs, a chart, the latest audits and the recent events.
    static let status = #"""
        {{<layout}}
        {{$title}}vlogger {{gateway}}{{/title}}
        {{$header}}
        """# + header + #"""
            {{/header}}
            {{$main}}
            <h2>Alarms ({{alarmCount}})</h2>
            {{#hasAlarms}}
            <table class="cards alarms"><tr><th>severity</th><th>rule</th><th>asset</th><th>where</th><th>since</th><th>started with</th><th>now</th></tr>
            {{#alarms}}<tr class="alarm"><td data-label="severity">{{severity}}</td><td data-label="rule">{{rule}}{{#acked}}<br><span class="acked">{{acked}}</span>{{/acked}}</td><td data-label="asset"><a href="{{link}}">{{asset}}</a></td><td data-label="where">{{place}}</td><td data-label="since" class="v">{{since}} ({{age}})</td><td data-label="started with">{{detail}}</td><td data-label="now" class="num">{{latest}}</td></tr>
            {{/alarms}}</table>
            {{/hasAlarms}}{{^hasAlarms}}<p class="none">No rule is violated now.</p>{{/hasAlarms}}
            {{#missing}}<p class="hot">{{.}}</p>{{/missing}}
            <h2>Readers</h2>
            <table class="cards"><tr><th>reader</th><th>location</th><th>driver</th><th>state</th><th>tags in field</th><th>last poll</th></tr>
            {{#readers}}<tr{{^up}} class="alarm"{{/up}}><td data-label="reader">{{id}}</td><td data-label="location">{{location}}</td><td data-label="driver">{{driver}}</td><td data-label="state">{{state}}</td><td data-label="tags in field">{{tags}}</td><td data-label="last poll">{{lastPoll}}</td></tr>
            {{/readers}}</table>
            {{#fields}}
            <h2>In the field of {{reader}}{{#location}} — {{location}}{{/location}} ({{count}})</h2>
            {{#hasTags}}<table class="cards"><tr><th>asset</th><th>UID</th><th>values</th><th>read</th></tr>
            {{#tags}}<tr{{#alarm}} class="alarm"{{/alarm}}><td data-label="asset"><a href="{{link}}">{{asset}}</a></td><td data-label="UID" class="uid">{{uid}}</td><td data-label="values" class="num">{{values}}</td><td data-label="read" class="v">{{time}}{{#hasTime}} · <span class="age" data-ms="{{ms}}">{{age}}</span> ago{{/hasTime}}</td></tr>
            {{/tags}}</table>{{/hasTags}}{{^hasTags}}<p class="none">No tag.</p>{{/hasTags}}
            {{/fields}}
            {{#hasOutputs}}<h2>Outputs</h2>
            <table class="cards"><tr><th>output</th><th>state</th><th>not yet sent</th><th>last success</th></tr>
            {{#outputs}}<tr{{^ok}} class="alarm"{{/ok}}><td data-label="output">{{name}}</td><td data-label="state">{{state}}</td><td data-label="not yet sent">{{backlog}}</td><td data-label="last success">{{lastSuccess}}</td></tr>
            {{/outputs}}</table>{{/hasOutputs}}
            {{#chart}}
            <h2>{{title}}</h2>
            <form class="pick" method="get" action="/">
            <label>value <select name="field" onchange="this.form.submit()">{{#choices}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/choices}}</select></label>
            <label>range <select name="range" onchange="this.form.submit()">{{#ranges}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/ranges}}</select></label>
            <noscript><button>show</button></noscript>
            </form>
            <div class="chart">{{{svg}}}</div>
            {{/chart}}
            {{#hasAudits}}<h2>Latest audit of each location</h2>
            <table class="cards"><tr><th>location</th><th>audit</th><th>present</th><th>missing</th><th>wrong location</th><th>unexpected</th></tr>
            {{#audits}}<tr{{#bad}} class="alarm"{{/bad}}><td data-label="location">{{location}}</td><td data-label="audit"><a href="{{link}}">#{{id}}, {{started}}</a></td><td data-label="present">{{present}}</td><td data-label="missing">{{missing}}</td><td data-label="wrong location">{{wrong}}</td><td data-label="unexpected">{{unexpected}}</td></tr>
            {{/audits}}</table>{{/hasAudits}}
            <h2>Recent events</h2>
            <table class="cards events"><tr><th>time</th><th>what</th><th>asset</th><th>where</th><th>detail</th></tr>
            {{#events}}<tr{{#alarm}} class="alarm"{{/alarm}}><td data-label="time" class="v">{{time}}</td><td data-label="what">{{what}}</td><td data-label="asset">{{#link}}<a href="{{link}}">{{asset}}</a>{{/link}}</td><td data-label="where">{{place}}</td><td data-label="detail">{{detail}}</td></tr>
            {{/events}}</table>
            {{/main}}
            {{/layout}}
            """#

    /// One tag's page: its asset, its values now, a chart per numeric field with the rules' limits, where it was
    /// read, its events and the audits that name it.
    static let tag = #"""
        {{<layout}}
        {{$title}}{{asset}} — vlogger {{gateway}}{{/title}}
        {{$header}}
        """# + header + #"""
            {{/header}}
            {{$main}}
            <h2>{{asset}}</h2>
            <table class="cards"><tr><th>UID</th><th>chip</th><th>registered at</th><th>last seen</th><th>first seen</th></tr>
            <tr{{#alarm}} class="alarm"{{/alarm}}><td data-label="UID" class="uid">{{uid}}</td><td data-label="chip">{{chip}}</td><td data-label="registered at">{{registered}}</td><td data-label="last seen">{{lastSeen}}</td><td data-label="first seen">{{firstSeen}}</td></tr></table>
            {{#hasAlarms}}<table class="cards alarms"><tr><th>alarm</th><th>since</th><th>started with</th></tr>
            {{#alarms}}<tr class="alarm"><td data-label="alarm">{{rule}} ({{severity}}){{#acked}}<br><span class="acked">{{acked}}</span>{{/acked}}</td><td data-label="since" class="v">{{since}} ({{age}})</td><td data-label="started with">{{detail}}</td></tr>
            {{/alarms}}</table>{{/hasAlarms}}
            <h2>Values now</h2>
            {{#hasValues}}<table class="cards"><tr><th>value</th><th>now</th></tr>
            {{#values}}<tr><td data-label="value">{{name}}</td><td data-label="now" class="num">{{value}}</td></tr>
            {{/values}}</table><p class="sub">read {{valuesTime}}</p>{{/hasValues}}{{^hasValues}}<p class="none">No values in this range.</p>{{/hasValues}}
            <form class="pick" method="get">
            <label>range <select name="range" onchange="this.form.submit()">{{#ranges}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{label}}</option>{{/ranges}}</select></label>
            <noscript><button>show</button></noscript>
            </form>
            {{#charts}}<h2>{{title}}</h2><div class="chart">{{{svg}}}</div>
            {{/charts}}
            <h2>Where it was read</h2>
            {{#hasPlaces}}<table class="cards"><tr><th>reader</th><th>location</th><th>from</th><th>to</th><th>readings</th></tr>
            {{#places}}<tr><td data-label="reader">{{reader}}</td><td data-label="location">{{location}}</td><td data-label="from" class="v">{{first}}</td><td data-label="to" class="v">{{last}}</td><td data-label="readings">{{count}}</td></tr>
            {{/places}}</table>{{/hasPlaces}}{{^hasPlaces}}<p class="none">Not read in this range.</p>{{/hasPlaces}}
            <h2>Events</h2>
            {{#hasEvents}}<table class="cards events"><tr><th>time</th><th>what</th><th>where</th><th>detail</th></tr>
            {{#events}}<tr{{#alarm}} class="alarm"{{/alarm}}><td data-label="time" class="v">{{time}}</td><td data-label="what">{{what}}</td><td data-label="where">{{place}}</td><td data-label="detail">{{detail}}</td></tr>
            {{/events}}</table>{{/hasEvents}}{{^hasEvents}}<p class="none">None.</p>{{/hasEvents}}
            <h2>Audits</h2>
            {{#hasAudits}}<table class="cards"><tr><th>audit</th><th>location</th><th>result</th></tr>
            {{#audits}}<tr{{#bad}} class="alarm"{{/bad}}><td data-label="audit"><a href="{{link}}">#{{id}}, {{started}}</a></td><td data-label="location">{{location}}</td><td data-label="result">{{status}}</td></tr>
            {{/audits}}</table>{{/hasAudits}}{{^hasAudits}}<p class="none">No audit names it.</p>{{/hasAudits}}
            <p class="sub noprint">Its readings as JSON: <a href="{{api}}">{{api}}</a></p>
            {{/main}}
            {{/layout}}
            """#

    /// An audit report to read and print on A4: the counts, the lists with the register's names, local times and
    /// the schedule's zone, the trend over the location's last audits, and a sign-off line.
    static let audit = #"""
        {{<layout}}
        {{$title}}Audit {{id}} — {{location}}{{/title}}
        {{$header}}<header><h1>Audit {{id}}: {{location}}</h1>
        <p class="sub">{{#site}}{{site}} · {{/site}}gateway {{gateway}} · {{started}} to {{finishedTime}} ({{zone}}) · readers {{readers}} · {{rounds}} inventory rounds · {{trigger}}</p>
        <p class="noprint sub"><a href="/">status</a></p></header>{{/header}}
        {{$main}}
        <table class="counts"><tr><th>present</th><th>missing</th><th>wrong location</th><th>unexpected</th><th>failed checks</th></tr>
        <tr><td>{{present}}</td><td{{#missingBad}} class="hot"{{/missingBad}}>{{missingCount}}</td><td{{#wrongBad}} class="hot"{{/wrongBad}}>{{wrongCount}}</td><td>{{unexpectedCount}}</td><td{{#checksBad}} class="hot"{{/checksBad}}>{{checksCount}}</td></tr></table>
        {{#sections}}<h2>{{title}}</h2>
        {{#hasRows}}<table class="cards"><tr>{{#head}}<th>{{.}}</th>{{/head}}</tr>
        {{#rows}}<tr>{{#cells}}<td data-label="{{label}}"{{#mono}} class="uid"{{/mono}}>{{#link}}<a href="{{link}}">{{text}}</a>{{/link}}{{^link}}{{text}}{{/link}}</td>{{/cells}}</tr>
        {{/rows}}</table>{{/hasRows}}{{^hasRows}}<p class="none">None.</p>{{/hasRows}}
        {{/sections}}
        <h2>Present and missing over the last audits of {{location}}</h2>
        <div class="chart">{{{history}}}</div>
        <div class="sign"><div>Checked by (name)</div><div>Date</div><div>Signature</div></div>
        {{/main}}
        {{/layout}}
        """#
}
