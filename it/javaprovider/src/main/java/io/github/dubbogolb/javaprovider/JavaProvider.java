package io.github.dubbogolb.javaprovider;

import com.google.protobuf.StringValue;
import java.lang.reflect.Field;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import org.apache.dubbo.common.utils.NetUtils;
import org.apache.dubbo.config.ApplicationConfig;
import org.apache.dubbo.config.MethodConfig;
import org.apache.dubbo.config.ProtocolConfig;
import org.apache.dubbo.config.RegistryConfig;
import org.apache.dubbo.config.ServiceConfig;
import org.apache.dubbo.config.bootstrap.DubboBootstrap;
import org.dubbogo.lb.samples.Greeter;

/**
 * A Dubbo Java 3.3 provider of the greeter service over triple, registered in Nacos, for a
 * fleet of Java and dubbo-go providers: the Java twin of samples/provider.
 *
 * <pre>
 *   java ... JavaProvider -port 20001 -weight 300 -warmup 30s -latency exp:5ms \
 *       -registry 127.0.0.1:8848 -group DEFAULT_GROUP -name j1
 * </pre>
 *
 * <p>Flags (each "-flag value" or "-flag=value"; "--flag" too):
 *
 * <ul>
 *   <li>-port N: the triple port (required, 1 to 65535);
 *   <li>-name S: the name every reply carries (default j&lt;port&gt;);
 *   <li>-weight N: the weight URL parameter, a positive integer (default 100);
 *   <li>-warmup D: the warmup period, a Go duration ("30s", "1m0s", "0s") or a number of
 *       milliseconds (Dubbo's unit); "" leaves Dubbo's default (600000 ms);
 *   <li>-latency SPEC: the simulated service time, samples/provider's forms: "5ms",
 *       "exp:5ms" (exponential with that mean), "uniform:2ms-8ms", "normal:5ms/1ms"
 *       (default 1ms);
 *   <li>-registry HOST:PORT: the Nacos server (default 127.0.0.1:8848);
 *   <li>-group G: the Nacos group (default DEFAULT_GROUP);
 *   <li>-namespace ID, -username U, -password P: a Nacos namespace and login (default none);
 *   <li>-register-mode interface|instance|all: Dubbo's dubbo.application.register-mode,
 *       interface-level, application-level or both (default all, Dubbo's own default);
 *   <li>-metadata-type local|remote: Dubbo's dubbo.application.metadata-type, where
 *       consumers at application level find the service's parameters: local, from the
 *       provider's own metadata service (served on the triple port), or remote, from the
 *       metadata report, which is the Nacos registry (default local, Dubbo's own default);
 *   <li>-loadbalance NAME: the balancer the provider names for its consumers, at service level
 *       (@DubboService(loadbalance = NAME): the loadbalance URL parameter; default none);
 *   <li>-method-loadbalance NAME: the same for the method Hello, which Dubbo registers in its
 *       own spelling, Hello.loadbalance (default none);
 *   <li>-zone NAME: the provider's zone, the service parameter lb.zone that dubbo-go consumers'
 *       zone-aware routing reads (default none).
 * </ul>
 *
 * <p>Logs (Dubbo's and Nacos's, both through java.util.logging): warnings and errors, on
 * stderr (src/main/resources/logging.properties; javaprovider.sh's JAVAPROVIDER_LOG_LEVEL
 * changes the level).
 *
 * <p>It registers 127.0.0.1 only (see {@link #forceLoopback}), prints one line
 * "java provider NAME: serving ..." once exported and registered, and on SIGTERM or SIGINT
 * unregisters and exits.
 */
public final class JavaProvider {
    private JavaProvider() {}

    /** Loopback, the only address the provider may register. */
    static final String LOOPBACK = "127.0.0.1";

    public static void main(String[] args) {
        Flags.main("java provider", args, Options::parse, JavaProvider::serve);
    }

    private static void serve(Options o) throws InterruptedException {
        ApplicationConfig app = new ApplicationConfig("dubbogo-lb-java-provider");
        app.setQosEnable(false); // its port 22222 would clash between providers
        app.setRegisterMode(o.registerMode);
        app.setLogger("jdk");
        app.setProtocol("tri"); // the application-level instance's endpoint
        app.setMetadataType(o.metadataType);
        // No files under ~/.dubbo: every provider and consumer of a run would share them (Dubbo
        // warns "not exclusive" and drops them), and one test's cached mapping or metadata must
        // not reach another's provider.
        app.setEnableFileCache(false);

        RegistryConfig registry = o.registry.config();

        ProtocolConfig protocol = new ProtocolConfig("tri", o.port);
        protocol.setHost(LOOPBACK);

        ServiceConfig<Greeter> service = new ServiceConfig<>();
        service.setInterface(Greeter.class);
        service.setRef(new Backend(o.name, o.latency));
        service.setWeight(o.weight);
        if (o.warmupMillis >= 0) {
            service.setWarmup(o.warmupMillis);
        }
        if (!o.loadbalance.isEmpty()) {
            service.setLoadbalance(o.loadbalance);
        }
        if (!o.zone.isEmpty()) {
            // The provider's zone for dubbo-go consumers' zone-aware
            // routing: a service parameter, lb.zone, as any Dubbo provider
            // can set it.
            service.setParameters(java.util.Map.of("lb.zone", o.zone));
        }
        if (!o.methodLoadbalance.isEmpty()) {
            MethodConfig hello = new MethodConfig();
            hello.setName("Hello");
            hello.setLoadbalance(o.methodLoadbalance);
            service.setMethods(List.of(hello));
        }

        DubboBootstrap bootstrap = DubboBootstrap.getInstance()
                .application(app)
                .registry(registry)
                .protocol(protocol)
                .service(service);
        bootstrap.start(); // exports and registers before it returns
        if (!LOOPBACK.equals(NetUtils.getLocalHost())) {
            throw new IllegalStateException("Dubbo's local address is " + NetUtils.getLocalHost() + ", not " + LOOPBACK);
        }
        System.out.printf(Locale.ROOT,
                "java provider %s: serving %s on %s:%d, weight %d, warmup %s, latency %s, register-mode %s, metadata-type %s, loadbalance %s, Hello.loadbalance %s, Dubbo %s%n",
                o.name, Greeter.class.getName(), LOOPBACK, o.port, o.weight,
                o.warmupMillis >= 0 ? o.warmupMillis + "ms" : "Dubbo's default", o.latency, o.registerMode, o.metadataType,
                o.loadbalance.isEmpty() ? "none" : o.loadbalance, o.methodLoadbalance.isEmpty() ? "none" : o.methodLoadbalance,
                org.apache.dubbo.common.Version.getVersion());
        System.out.flush();
        bootstrap.await(); // until a shutdown hook (SIGTERM, SIGINT) stops Dubbo
    }

    /**
     * Makes Dubbo register (and so advertise) 127.0.0.1. Dubbo 3.3 refuses every loopback
     * address it is given: a protocol host of 127.0.0.1 is "invalid" (NetUtils.isInvalidLocalHost)
     * and replaced by the first non-loopback address of the machine, and DUBBO_IP_TO_REGISTRY or
     * DUBBO_IP_TO_BIND set to 127.0.0.1 stop the export with IllegalArgumentException
     * ("Specified invalid registry ip"). What it then falls back to is NetUtils.getLocalHost(),
     * which caches its answer in a static field: setting that cache to 127.0.0.1 before Dubbo
     * starts makes 127.0.0.1 the address registered. Dubbo binds 0.0.0.0 for such a host
     * (anyhost=true), as it does for any host it finds by itself.
     */
    static void forceLoopback() throws ReflectiveOperationException {
        Field f = NetUtils.class.getDeclaredField("HOST_ADDRESS");
        f.setAccessible(true);
        f.set(null, LOOPBACK);
    }

    /**
     * Reads the first logging.properties of the classpath into java.util.logging before Dubbo
     * logs anything: Dubbo reads it too, but only once its first logs went out at INFO.
     */
    static void configureLogs() throws java.io.IOException {
        try (java.io.InputStream in = JavaProvider.class.getClassLoader().getResourceAsStream("logging.properties")) {
            if (in != null) {
                java.util.logging.LogManager.getLogManager().readConfiguration(in);
            }
        }
    }

    /** The service: the provider's name after a simulated latency. */
    static final class Backend implements Greeter {
        private final StringValue reply;
        private final Latency latency;

        Backend(String name, Latency latency) {
            this.reply = StringValue.of(name);
            this.latency = latency;
        }

        @Override
        public StringValue Hello(StringValue request) {
            long nanos = latency.sample();
            if (nanos > 0) {
                try {
                    Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            }
            return reply;
        }
    }

    /** A distribution of service times, samples/internal/greeter.Latency's forms. */
    static final class Latency {
        private final char kind; // 'f' fixed, 'e' exponential, 'u' uniform, 'n' normal
        private final long a;
        private final long b; // nanoseconds
        private final String spec;

        private Latency(char kind, long a, long b, String spec) {
            this.kind = kind;
            this.a = a;
            this.b = b;
            this.spec = spec;
        }

        static Latency parse(String spec) {
            String s = spec.trim();
            if (s.isEmpty()) {
                return new Latency('f', 0, 0, "0s");
            }
            int colon = s.indexOf(':');
            if (colon < 0) {
                return new Latency('f', Flags.duration(s), 0, s);
            }
            String kind = s.substring(0, colon);
            String rest = s.substring(colon + 1);
            switch (kind) {
                case "exp":
                    return new Latency('e', Flags.duration(rest), 0, s);
                case "uniform":
                case "normal": {
                    String sep = kind.equals("uniform") ? "-" : "/";
                    int i = rest.indexOf(sep);
                    if (i < 0) {
                        throw new IllegalArgumentException("latency " + spec + ": missing \"" + sep + "\"");
                    }
                    long lo = Flags.duration(rest.substring(0, i));
                    long hi = Flags.duration(rest.substring(i + 1));
                    if (kind.equals("uniform") && hi < lo) {
                        throw new IllegalArgumentException("latency " + spec + ": upper bound below lower bound");
                    }
                    return new Latency(kind.charAt(0), lo, hi, s);
                }
                default:
                    throw new IllegalArgumentException("latency " + spec
                            + ": unknown distribution (want 5ms, exp:5ms, uniform:2ms-8ms or normal:5ms/1ms)");
            }
        }

        /** One service time, in nanoseconds. */
        long sample() {
            ThreadLocalRandom r = ThreadLocalRandom.current();
            switch (kind) {
                case 'e':
                    return (long) (-Math.log(1 - r.nextDouble()) * a);
                case 'u':
                    return a + (long) (r.nextDouble() * (b - a));
                case 'n':
                    return Math.max(0, (long) (a + r.nextGaussian() * b));
                default:
                    return a;
            }
        }

        @Override
        public String toString() {
            return spec;
        }
    }

    static final class Options {
        int port;
        String name = "";
        int weight = 100;
        int warmupMillis = -1; // -1: Dubbo's default
        Latency latency = Latency.parse("1ms");
        final Flags.Registry registry = new Flags.Registry();
        String registerMode = "all";
        String metadataType = "local";
        String loadbalance = "";
        String methodLoadbalance = "";
        String zone = "";

        static Options parse(String[] args) {
            Options o = new Options();
            Flags.parse(args, o.registry, (flag, value) -> {
                switch (flag) {
                    case "port": o.port = (int) Flags.integer(flag, value, 1, 65535); break;
                    case "name": o.name = value; break;
                    case "weight": o.weight = (int) Flags.integer(flag, value, 1, Integer.MAX_VALUE); break;
                    case "warmup": o.warmupMillis = warmup(value); break;
                    case "latency": o.latency = Latency.parse(value); break;
                    case "register-mode":
                        if (!value.equals("interface") && !value.equals("instance") && !value.equals("all")) {
                            throw new IllegalArgumentException("-register-mode " + value + ": want interface, instance or all");
                        }
                        o.registerMode = value;
                        break;
                    case "metadata-type":
                        if (!value.equals("local") && !value.equals("remote")) {
                            throw new IllegalArgumentException("-metadata-type " + value + ": want local or remote");
                        }
                        o.metadataType = value;
                        break;
                    case "loadbalance": o.loadbalance = value.trim(); break;
                    case "method-loadbalance": o.methodLoadbalance = value.trim(); break;
                    case "zone": o.zone = value.trim(); break;
                    default:
                        throw new IllegalArgumentException("unknown flag -" + flag);
                }
            });
            if (o.port == 0) {
                throw new IllegalArgumentException("-port is required");
            }
            if (o.name.isEmpty()) {
                o.name = "j" + o.port;
            }
            o.registry.check();
            return o;
        }

        /** A Go duration or plain milliseconds, to whole milliseconds; "" is -1 (default). */
        private static int warmup(String value) {
            String v = value.trim();
            if (v.isEmpty()) {
                return -1;
            }
            long ms;
            if (v.chars().allMatch(Character::isDigit)) {
                ms = Long.parseLong(v);
            } else {
                ms = Flags.duration(v) / 1_000_000;
            }
            if (ms > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("-warmup " + value + ": too long");
            }
            return (int) ms;
        }
    }
}
