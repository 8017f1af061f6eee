package io.github.dubbogolb.javaprovider;

import com.google.protobuf.StringValue;
import java.lang.reflect.Field;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.ReferenceConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.apache.dubbo.rpc.AdaptiveMetrics;
import org.apache.dubbo.rpc.Invoker;
import org.apache.dubbo.rpc.cluster.ClusterInvoker;
import org.apache.dubbo.rpc.model.ApplicationModel;
import org.dubbogo.lb.samples.Greeter;

/**
 * A Dubbo Java 3.3 consumer of the greeter service over triple, discovering its providers
 * through Nacos, for the tests of what a Java consumer makes of our Go providers: by default
 * with Dubbo's {@code adaptive} balancer, which asks every provider for its load
 * ({@code lb_adaptive}) and weighs it by the answer.
 *
 * <pre>
 *   java ... JavaConsumer -registry 127.0.0.1:8848 -group G -callers 4 -calls 2000
 * </pre>
 *
 * <p>Flags (each "-flag value" or "-flag=value"; "--flag" too):
 *
 * <ul>
 *   <li>-registry HOST:PORT, -group G, -namespace ID, -username U, -password P: Nacos, as
 *       JavaProvider's;
 *   <li>-loadbalance NAME: Dubbo's balancer (default adaptive);
 *   <li>-callers N: concurrent callers (default 4);
 *   <li>-calls N: stop after N calls in all; -duration D: stop after D (a Go duration); at
 *       least one of them (default -duration 10s);
 *   <li>-providers N: before calling, wait until Dubbo knows N providers (default 1), at most
 *       -wait (default 2m);
 *   <li>-timeout D: the timeout of one call (default 5s); no retries: a failed call counts;
 *   <li>-discovery interface|application|both: how Dubbo finds the providers, its migration
 *       step FORCE_INTERFACE, FORCE_APPLICATION or APPLICATION_FIRST (default interface: the
 *       interface-level registrations of dubbo-go providers).
 * </ul>
 *
 * <p>It prints one line "java consumer: ready, N providers" before the first call and, at the
 * end, one JSON line: {@code {"java_consumer":true,"calls":..,"errors":..,"seconds":..,
 * "by":{name:calls},"mean_ms":{name:ms},"last_error":"..","adaptive":{"host:port":{"load":..,
 * "cur_time":..,"ewma":..,"requests":..,"successes":..,"errors":..}}}}, where "by" counts the
 * successful calls by the name the provider answered, and "adaptive" is what Dubbo's
 * {@code AdaptiveMetrics} recorded per provider: the load and curTime of its last
 * {@code lb_adaptive} report (0 when none came), its RT average and its call counts.
 * Exit status 0 when it ran, whatever the calls' outcome.
 */
public final class JavaConsumer {
    private JavaConsumer() {}

    public static void main(String[] args) {
        Flags.main("java consumer", args, Options::parse, o -> {
            run(o);
            System.exit(0); // Dubbo's non-daemon threads would keep the JVM alive
        });
    }

    private static void run(Options o) throws Exception {
        System.setProperty("dubbo.application.migration.step", o.migrationStep);

        ApplicationConfig app = new ApplicationConfig("dubbogo-lb-java-consumer");
        app.setQosEnable(false);
        app.setLogger("jdk");
        app.setEnableFileCache(false); // as the provider: nothing shared under ~/.dubbo

        RegistryConfig registry = o.registry.config();
        registry.setUseAsMetadataCenter(false);
        registry.setRegister(false); // a consumer: nothing of it in Nacos

        ReferenceConfig<Greeter> ref = new ReferenceConfig<>();
        ref.setInterface(Greeter.class);
        ref.setProtocol("tri");
        ref.setLoadbalance(o.loadbalance);
        ref.setTimeout((int) o.timeoutMillis);
        ref.setRetries(0);
        ref.setCheck(false);

        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(app)
                .registry(registry)
                .reference(ref);
        bootstrap.start();
        Greeter greeter = ref.get();
        int known = awaitProviders(ref, o.providers, o.waitMillis);
        System.out.printf(Locale.ROOT, "java consumer: ready, %d providers, loadbalance %s, Dubbo %s%n",
                known, o.loadbalance, org.apache.dubbo.common.Version.getVersion());
        System.out.flush();

        Stats stats = new Stats();
        long start = System.nanoTime();
        long end = o.durationNanos > 0 ? start + o.durationNanos : Long.MAX_VALUE;
        AtomicLong left = new AtomicLong(o.calls > 0 ? o.calls : Long.MAX_VALUE);
        CountDownLatch done = new CountDownLatch(o.callers);
        for (int i = 0; i < o.callers; i++) {
            int caller = i;
            Thread th = new Thread(() -> {
                try {
                    long n = 0;
                    while (System.nanoTime() < end && left.getAndDecrement() > 0) {
                        long t0 = System.nanoTime();
                        try {
                            StringValue reply = greeter.Hello(StringValue.of("k" + caller + "-" + n++));
                            stats.success(reply.getValue(), System.nanoTime() - t0);
                        } catch (RuntimeException e) {
                            stats.failure(e);
                        }
                    }
                } finally {
                    done.countDown();
                }
            }, "caller-" + i);
            th.setDaemon(true);
            th.start();
        }
        done.await();
        double seconds = (System.nanoTime() - start) / 1e9;
        // AdaptiveLoadBalanceFilter records a report on a thread of its own: let it catch up.
        Thread.sleep(500);
        System.out.println(stats.json(seconds, adaptive(bootstrap.getApplicationModel())));
        System.out.flush();
        bootstrap.stop();
    }

    /**
     * Waits until the reference's directory holds n providers that Dubbo calls available
     * (connected), or for at most millis; returns how many it has then.
     */
    private static int awaitProviders(ReferenceConfig<Greeter> ref, int n, long millis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + millis;
        int known = 0;
        while (true) {
            Invoker<?> inv = ref.getInvoker();
            if (inv instanceof ClusterInvoker<?>) {
                try {
                    known = 0;
                    for (Invoker<?> p : ((ClusterInvoker<?>) inv).getDirectory().getAllInvokers()) {
                        if (p.isAvailable()) {
                            known++;
                        }
                    }
                } catch (RuntimeException e) {
                    known = 0; // not subscribed yet
                }
            }
            if (known >= n || System.currentTimeMillis() > deadline) {
                return known;
            }
            Thread.sleep(100);
        }
    }

    /**
     * What Dubbo's AdaptiveMetrics (the state of the adaptive balancer, one per application)
     * holds per provider, keyed "host:port". Its fields are private and it has no getter but
     * the cost itself, so they are read by reflection; a missing field reads as NaN.
     */
    static Map<String, Map<String, Double>> adaptive(ApplicationModel model) {
        Map<String, Map<String, Double>> out = new TreeMap<>();
        AdaptiveMetrics metrics = model.getBeanFactory().getBean(AdaptiveMetrics.class);
        if (metrics == null) {
            return out;
        }
        Object stats = field(metrics, "metricsStatistics");
        if (!(stats instanceof Map<?, ?>)) {
            return out;
        }
        for (Map.Entry<?, ?> e : ((Map<?, ?>) stats).entrySet()) {
            // The key is "host:port:" + the invocation's protocol service key.
            String[] parts = String.valueOf(e.getKey()).split(":", 3);
            String addr = parts.length >= 2 ? parts[0] + ":" + parts[1] : String.valueOf(e.getKey());
            Object m = e.getValue();
            Map<String, Double> v = new TreeMap<>();
            v.put("load", number(field(m, "providerCPULoad")));
            v.put("cur_time", number(field(m, "currentProviderTime")));
            v.put("ewma", number(field(m, "ewma")));
            v.put("requests", number(field(m, "consumerReq")));
            v.put("successes", number(field(m, "consumerSuccess")));
            v.put("errors", number(field(m, "errorReq")));
            out.put(addr, v);
        }
        return out;
    }

    private static Object field(Object o, String name) {
        try {
            Field f = o.getClass().getDeclaredField(name);
            f.setAccessible(true);
            return f.get(o);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    private static double number(Object o) {
        if (o instanceof Number) {
            return ((Number) o).doubleValue();
        }
        return Double.NaN;
    }

    /** The calls' outcomes, from every caller. */
    static final class Stats {
        private final ConcurrentHashMap<String, LongAdder> by = new ConcurrentHashMap<>();
        private final ConcurrentHashMap<String, LongAdder> nanos = new ConcurrentHashMap<>();
        private final LongAdder errors = new LongAdder();
        private volatile String lastError = "";

        void success(String name, long elapsed) {
            by.computeIfAbsent(name, k -> new LongAdder()).increment();
            nanos.computeIfAbsent(name, k -> new LongAdder()).add(elapsed);
        }

        void failure(Throwable e) {
            errors.increment();
            lastError = String.valueOf(e);
        }

        String json(double seconds, Map<String, Map<String, Double>> adaptive) {
            StringBuilder b = new StringBuilder(256);
            long ok = 0;
            Map<String, Long> counts = new TreeMap<>();
            for (Map.Entry<String, LongAdder> e : by.entrySet()) {
                counts.put(e.getKey(), e.getValue().sum());
                ok += e.getValue().sum();
            }
            b.append("{\"java_consumer\":true,\"calls\":").append(ok + errors.sum())
                    .append(",\"errors\":").append(errors.sum())
                    .append(",\"seconds\":").append(num(seconds))
                    .append(",\"by\":{");
            String sep = "";
            for (Map.Entry<String, Long> e : counts.entrySet()) {
                b.append(sep).append(quote(e.getKey())).append(':').append(e.getValue());
                sep = ",";
            }
            b.append("},\"mean_ms\":{");
            sep = "";
            for (Map.Entry<String, Long> e : counts.entrySet()) {
                double ms = nanos.get(e.getKey()).sum() / 1e6 / Math.max(e.getValue(), 1);
                b.append(sep).append(quote(e.getKey())).append(':').append(num(ms));
                sep = ",";
            }
            b.append("},\"last_error\":").append(quote(lastError)).append(",\"adaptive\":{");
            sep = "";
            for (Map.Entry<String, Map<String, Double>> e : adaptive.entrySet()) {
                b.append(sep).append(quote(e.getKey())).append(":{");
                String s2 = "";
                for (Map.Entry<String, Double> f : e.getValue().entrySet()) {
                    b.append(s2).append(quote(f.getKey())).append(':').append(num(f.getValue()));
                    s2 = ",";
                }
                b.append('}');
                sep = ",";
            }
            return b.append("}}").toString();
        }

        /** A JSON number; NaN and infinities, which JSON lacks, as null. */
        private static String num(double v) {
            if (Double.isNaN(v) || Double.isInfinite(v)) {
                return "null";
            }
            if (v == Math.rint(v) && Math.abs(v) < 1e15) {
                return Long.toString((long) v);
            }
            return String.format(Locale.ROOT, "%.4f", v);
        }

        private static String quote(String s) {
            StringBuilder b = new StringBuilder(s.length() + 2).append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            return b.append('"').toString();
        }
    }

    /** The command line. */
    static final class Options {
        final Flags.Registry registry = new Flags.Registry();
        String loadbalance = "adaptive";
        int callers = 4;
        long calls = 0;
        long durationNanos = 0;
        int providers = 1;
        long waitMillis = 120_000;
        long timeoutMillis = 5_000;
        String migrationStep = "FORCE_INTERFACE";

        static Options parse(String[] args) {
            Options o = new Options();
            Flags.parse(args, o.registry, (flag, value) -> {
                switch (flag) {
                    case "loadbalance": o.loadbalance = value; break;
                    case "callers": o.callers = (int) Flags.integer(flag, value, 1, 1000); break;
                    case "calls": o.calls = Flags.integer(flag, value, 0, Long.MAX_VALUE / 2); break;
                    case "providers": o.providers = (int) Flags.integer(flag, value, 0, 10_000); break;
                    case "duration": o.durationNanos = Flags.duration(value); break;
                    case "wait": o.waitMillis = Flags.duration(value) / 1_000_000; break;
                    case "timeout":
                        o.timeoutMillis = Flags.duration(value) / 1_000_000;
                        if (o.timeoutMillis < 1 || o.timeoutMillis > Integer.MAX_VALUE) {
                            throw new IllegalArgumentException("-timeout " + value + ": want 1ms to 24 days");
                        }
                        break;
                    case "discovery":
                        switch (value) {
                            case "interface": o.migrationStep = "FORCE_INTERFACE"; break;
                            case "application": o.migrationStep = "FORCE_APPLICATION"; break;
                            case "both": o.migrationStep = "APPLICATION_FIRST"; break;
                            default:
                                throw new IllegalArgumentException("-discovery " + value + ": want interface, application or both");
                        }
                        break;
                    default:
                        throw new IllegalArgumentException("unknown flag -" + flag);
                }
            });
            if (o.calls == 0 && o.durationNanos == 0) {
                o.durationNanos = TimeUnit.SECONDS.toNanos(10);
            }
            o.registry.check();
            if (o.loadbalance.isEmpty()) {
                throw new IllegalArgumentException("-loadbalance must not be empty");
            }
            return o;
        }
    }
}
