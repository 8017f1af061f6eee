package io.github.dubbogolb.javaprovider;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Function;
import org.apache.dubbo.config.RegistryConfig;

/**
 * The command line of {@link JavaProvider} and {@link JavaConsumer}, in the syntax of Go's
 * flag package that the Go sample apps use: {@code -name value} or {@code -name=value}, with
 * one dash or two. Every malformed flag is an IllegalArgumentException that names it.
 */
final class Flags {
    private Flags() {}

    /** The work of a main method, on its parsed options. */
    interface Body<T> {
        void run(T options) throws Exception;
    }

    /**
     * The main method of both apps: parses args with parse (exit status 2 and the flag's error
     * on stderr for a bad one), sets up logging and the loopback address, and runs body (exit
     * status 1 and the stack trace for anything it throws). who prefixes the messages.
     */
    static <T> void main(String who, String[] args, Function<String[], T> parse, Body<T> body) {
        T options;
        try {
            options = parse.apply(args);
        } catch (IllegalArgumentException e) {
            System.err.println(who + ": " + e.getMessage());
            System.exit(2);
            return;
        }
        try {
            JavaProvider.configureLogs();
            // Dubbo connects to a provider registered as 127.0.0.1 at NetUtils.getLocalHost()
            // instead (NetUtils.filterLocalHost), the machine's first non-loopback address,
            // where nothing listens: make that loopback too.
            JavaProvider.forceLoopback();
            body.run(options);
        } catch (Throwable t) {
            System.err.println(who + ": " + t);
            t.printStackTrace();
            System.exit(1);
        }
    }

    /** Receives one flag; throws IllegalArgumentException for an unknown or bad one. */
    interface Setter {
        void set(String flag, String value);
    }

    /** Hands every flag of args, in order, to registry's flags first, then to setter. */
    static void parse(String[] args, Registry registry, Setter setter) {
        for (int i = 0; i < args.length; i++) {
            String flag = args[i];
            if (!flag.startsWith("-")) {
                throw new IllegalArgumentException("unexpected argument " + flag);
            }
            flag = flag.replaceFirst("^--?", "");
            String value = null;
            int eq = flag.indexOf('=');
            if (eq >= 0) {
                value = flag.substring(eq + 1);
                flag = flag.substring(0, eq);
            }
            if (value == null) {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("flag -" + flag + " needs a value");
                }
                value = args[++i];
            }
            if (!registry.set(flag, value)) {
                setter.set(flag, value);
            }
        }
    }

    /** The decimal integer value of flag, from lo to hi. */
    static long integer(String flag, String value, long lo, long hi) {
        try {
            long v = Long.parseLong(value.trim());
            if (v >= lo && v <= hi) {
                return v;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException("-" + flag + " " + value + ": want an integer from " + lo + " to " + hi);
    }

    /** Go's time.ParseDuration for non-negative durations, in nanoseconds. */
    static long duration(String text) {
        String s = text.trim();
        if (s.equals("0")) {
            return 0;
        }
        if (s.isEmpty()) {
            throw new IllegalArgumentException("empty duration");
        }
        double total = 0;
        int i = 0;
        while (i < s.length()) {
            int start = i;
            while (i < s.length() && (Character.isDigit(s.charAt(i)) || s.charAt(i) == '.')) {
                i++;
            }
            if (start == i) {
                throw new IllegalArgumentException("duration " + text + ": want a number and a unit, e.g. 5ms");
            }
            double v;
            try {
                v = Double.parseDouble(s.substring(start, i));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("duration " + text + ": bad number");
            }
            int u = i;
            while (i < s.length() && !Character.isDigit(s.charAt(i)) && s.charAt(i) != '.') {
                i++;
            }
            double unit;
            switch (s.substring(u, i)) {
                case "ns": unit = 1; break;
                case "us": case "µs": unit = 1e3; break;
                case "ms": unit = 1e6; break;
                case "s": unit = 1e9; break;
                case "m": unit = 60e9; break;
                case "h": unit = 3600e9; break;
                default:
                    throw new IllegalArgumentException("duration " + text + ": unknown unit \"" + s.substring(u, i)
                            + "\" (want ns, us, ms, s, m or h)");
            }
            total += v * unit;
        }
        if (total > Long.MAX_VALUE / 2) {
            throw new IllegalArgumentException("duration " + text + ": too long");
        }
        return (long) total;
    }

    /**
     * The Nacos flags that the provider and the consumer share, as the Go sample apps spell
     * them: -registry host:port, -group, -namespace, -username, -password.
     */
    static final class Registry {
        String address = "127.0.0.1:8848";
        String group = "DEFAULT_GROUP";
        String namespace = "";
        String username = "";
        String password = "";

        /** Takes flag if it is one of the registry's; false if it is not. */
        boolean set(String flag, String value) {
            switch (flag) {
                case "registry": address = value; return true;
                case "group": group = value; return true;
                case "namespace": namespace = value; return true;
                case "username": username = value; return true;
                case "password": password = value; return true;
                default: return false;
            }
        }

        /** Throws if a flag that must have a value was given an empty one. */
        void check() {
            if (address.isEmpty() || group.isEmpty()) {
                throw new IllegalArgumentException("-registry and -group must not be empty");
            }
        }

        /** The registry, not used as a configuration center, with the namespace and credentials given. */
        RegistryConfig config() {
            RegistryConfig registry = new RegistryConfig("nacos://" + address);
            registry.setGroup(group);
            registry.setUseAsConfigCenter(false);
            Map<String, String> params = new HashMap<>();
            if (!namespace.isEmpty()) {
                params.put("namespace", namespace);
            }
            registry.setParameters(params);
            if (!username.isEmpty()) {
                registry.setUsername(username);
                registry.setPassword(password);
            }
            return registry;
        }
    }
}
