// GenVectors prints test vectors for package ringhash by asking the real
// org.apache.dubbo.rpc.cluster.loadbalance.ConsistentHashLoadBalance which
// provider it selects for a set of invocations. See README.md for how to run
// it; the output is committed as vectors.txt and read by vectors_test.go.
//
// Output format (UTF-8, one vector per line, fields separated by TAB):
//
//   # comment
//   case <name>                   starts a case
//   nodes <hash.nodes or "-">     "-" means the parameter is not set (160)
//   arguments <hash.arguments or "-">
//   providers <addr>,<addr>,...   invoker order, as passed to select()
//   source <url|instance>         how each provider URL was built (absent: url):
//                                 url      URL.valueOf("dubbo://<addr>/..."), as for a
//                                          URL given as text (direct URLs, registries that
//                                          store URL strings); an IPv6 <addr> is "[ip]:port"
//                                 instance new ServiceConfigURL(protocol, ip, port, ...), as
//                                          NacosRegistry.buildURL and application-level
//                                          discovery do from a registry instance's ip and
//                                          port; <addr> is "ip:port", the ip unbracketed
//   <selected address> TAB <arg> TAB <arg> ...
//
// Each <arg> is "<Java type>=<String.valueOf(arg)>" ("null=null" for null).
// Keys must not contain TAB or newline.

import org.apache.dubbo.common.URL;
import org.apache.dubbo.common.Version;
import org.apache.dubbo.common.url.component.ServiceConfigURL;
import org.apache.dubbo.rpc.Invocation;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.Result;
import org.apache.dubbo.rpc.RpcInvocation;
import org.apache.dubbo.rpc.cluster.loadbalance.ConsistentHashLoadBalance;

import java.io.PrintStream;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class GenVectors {
    static final String SERVICE = "org.example.DemoService";
    static final String METHOD = "sayHello";

    /** Minimal invoker: only its URL matters to the load balancer. */
    static final class StubInvoker implements Invoker<Object> {
        private final URL url;

        StubInvoker(URL url) {
            this.url = url;
        }

        public Class<Object> getInterface() {
            return Object.class;
        }

        public Result invoke(Invocation invocation) {
            throw new UnsupportedOperationException();
        }

        public URL getUrl() {
            return url;
        }

        public boolean isAvailable() {
            return true;
        }

        public void destroy() {}
    }

    static PrintStream out;

    static List<Invoker<Object>> invokers(List<String> addrs, String nodes, String arguments, boolean instance) {
        List<Invoker<Object>> list = new ArrayList<>();
        for (String a : addrs) {
            URL url;
            if (instance) {
                // NacosRegistry.buildURL: new ServiceConfigURL(protocol, instance.getIp(),
                // instance.getPort(), path, metadata).
                int colon = a.lastIndexOf(':');
                Map<String, String> params = new HashMap<>();
                params.put("side", "provider");
                if (nodes != null) {
                    params.put("hash.nodes", nodes);
                }
                if (arguments != null) {
                    params.put("hash.arguments", arguments);
                }
                url = new ServiceConfigURL(
                        "dubbo", a.substring(0, colon), Integer.parseInt(a.substring(colon + 1)), SERVICE, params);
            } else {
                StringBuilder u = new StringBuilder("dubbo://" + a + "/" + SERVICE + "?side=provider");
                if (nodes != null) {
                    u.append("&hash.nodes=").append(nodes);
                }
                if (arguments != null) {
                    u.append("&hash.arguments=").append(arguments);
                }
                url = URL.valueOf(u.toString());
            }
            if (!url.getAddress().equals(a)) {
                throw new IllegalStateException("provider " + a + " has address " + url.getAddress());
            }
            list.add(new StubInvoker(url));
        }
        return list;
    }

    static String describe(Object o) {
        if (o == null) {
            return "null=null";
        }
        return o.getClass().getSimpleName() + "=" + String.valueOf(o);
    }

    static void runCase(String name, List<String> addrs, String nodes, String arguments, List<Object[]> calls) {
        runCase(name, addrs, nodes, arguments, calls, false);
    }

    static void runCase(
            String name, List<String> addrs, String nodes, String arguments, List<Object[]> calls, boolean instance) {
        out.println("case " + name);
        out.println("nodes " + (nodes == null ? "-" : nodes));
        out.println("arguments " + (arguments == null ? "-" : arguments));
        out.println("providers " + String.join(",", addrs));
        if (instance) {
            out.println("source instance");
        }
        ConsistentHashLoadBalance lb = new ConsistentHashLoadBalance();
        List<Invoker<Object>> list = invokers(addrs, nodes, arguments, instance);
        URL consumer = URL.valueOf("consumer://127.0.0.1/" + SERVICE);
        for (Object[] args : calls) {
            RpcInvocation inv = new RpcInvocation();
            inv.setMethodName(METHOD);
            Class<?>[] types = new Class<?>[args.length];
            Arrays.fill(types, Object.class);
            inv.setParameterTypes(types);
            inv.setArguments(args);
            Invoker<Object> chosen = lb.select(list, consumer, inv);
            StringBuilder line = new StringBuilder(chosen.getUrl().getAddress());
            for (Object a : args) {
                String d = describe(a);
                if (d.indexOf('\t') >= 0 || d.indexOf('\n') >= 0) {
                    throw new IllegalArgumentException("key with TAB or newline: " + d);
                }
                line.append('\t').append(d);
            }
            out.println(line);
        }
    }

    static List<Object[]> single(List<Object> keys) {
        List<Object[]> calls = new ArrayList<>();
        for (Object k : keys) {
            calls.add(new Object[] {k});
        }
        return calls;
    }

    public static void main(String[] argv) throws Exception {
        out = new PrintStream(System.out, true, "UTF-8");
        if (!Charset.defaultCharset().equals(StandardCharsets.UTF_8)) {
            throw new IllegalStateException(
                    "run with -Dfile.encoding=UTF-8 (default charset is " + Charset.defaultCharset() + ")");
        }
        out.println("# Generated by testdata/GenVectors.java with the real ConsistentHashLoadBalance of");
        out.println("# org.apache.dubbo:dubbo:" + Version.getVersion() + " on Java " + System.getProperty("java.version")
                + ". Do not edit; see testdata/README.md.");

        List<String> ten = new ArrayList<>();
        for (int p = 20880; p < 20890; p++) {
            ten.add("127.0.0.1:" + p);
        }

        List<Object> keys = new ArrayList<>(Arrays.asList(
                "", "0", "1", "2", "42", "-1", "hello", "world", "Hello", "null",
                "user-1", "user-2", "user-3", "order:123456789", "a", "b", "c", "zz",
                " leading space", "trailing space ", "comma,separated", "with=equals",
                "你好", "café", "Ünïcödé ключ", "emoji 😀",
                "0123456789012345678901234567890123456789012345678901234567890123456789"));
        for (int i = 0; i < 33; i++) {
            keys.add("key-" + (i * 7919));
        }
        runCase("default", ten, null, null, single(keys));
        runCase("nodes40", ten, "40", null, single(keys));
        runCase("nodes7", ten, "7", null, single(keys.subList(0, 20)));

        // Non-String arguments: the key is String.valueOf(arg); null appends "null".
        List<Object> typed = Arrays.asList(
                42, -7, 123456789012L, true, false, 1.5d, 0.1d, 1e21d, 2.5f, 'x', null, (byte) 7, (short) -3);
        runCase("typed", ten, null, null, single(typed));

        // Several arguments in a given order; index 1 missing means it is skipped.
        List<Object[]> multi = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            multi.add(new Object[] {"tenant-" + i, "user-" + (i * 31), "ignored-" + i});
        }
        multi.add(new Object[] {"only-arg-0"});
        multi.add(new Object[] {42, null, "x"});
        multi.add(new Object[] {});
        runCase("args-1-0", ten, null, "1,0", multi);
        runCase("args-0-2-nodes80", ten, "80", "0,2", multi);

        // Two providers sharing the ring point 3133687857 (found by brute force);
        // keys k592, k1477, k6891 hash just below it. TreeMap.put keeps the
        // later invoker, so the winner depends on the invoker order.
        List<String> collide = Arrays.asList("10.0.1.63:20880", "10.0.1.239:20880");
        List<Object> ckeys = Arrays.asList("k592", "k1477", "k6891", "k0", "k1", "k2", "k3");
        runCase("collision-ab", collide, null, null, single(ckeys));
        List<String> rev = new ArrayList<>(collide);
        java.util.Collections.reverse(rev);
        runCase("collision-ba", rev, null, null, single(ckeys));

        // IPv6 providers. Java hashes URL.getAddress(), host + ":" + port with the
        // host as the URL holds it: "[fd00::1]:20880" when the URL was parsed from
        // text, "fd00::1:20880" when it was built from a registry instance's ip and
        // port (Nacos, application-level discovery). Mixed with IPv4 providers.
        List<String> v6url = Arrays.asList("[fd00::1]:20880", "[fd00::2]:20880", "[fd00::1]:20881",
                "[2001:db8::10]:20880", "[fd00:0:0:0:0:0:0:3]:20880", "10.0.0.1:20880");
        List<String> v6inst = new ArrayList<>();
        for (String a : v6url) {
            v6inst.add(a.replace("[", "").replace("]", ""));
        }
        runCase("ipv6-url", v6url, null, null, single(keys));
        runCase("ipv6-url-nodes40", v6url, "40", null, single(keys.subList(0, 30)));
        runCase("ipv6-instance", v6inst, null, null, single(keys), true);
        runCase("ipv4-instance", ten, null, null, single(keys.subList(0, 20)), true);
    }
}
